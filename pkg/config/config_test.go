package config

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, env map[string]string, args ...string) (Common, Ingress, error) {
	t.Helper()
	var c Common
	var in Ingress
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fs)
	in.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return c, in, err
	}
	if err := ApplyEnv(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		return c, in, err
	}
	return c, in, errors.Join(c.Validate(), in.Validate())
}

func TestEnvDefaultsAndFlagsWin(t *testing.T) {
	c, in, err := parse(t, map[string]string{
		"FLASHSALE_PAYMENT_WINDOW": "90s",
		"FLASHSALE_REDIS_ADDR":     "a:1,b:2",
		"FLASHSALE_JWT_SECRET":     "0123456789abcdef",
		"FLASHSALE_HTTP_ADDR":      "0.0.0.0:1",
	}, "-http-addr", "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if c.PaymentWindow != 90*time.Second || len(c.RedisAddrs()) != 2 || in.HTTPAddr != "127.0.0.1:9" {
		t.Fatalf("got %+v %+v", c, in)
	}
	if !strings.Contains(c.DSN(), "parseTime=true") || !strings.Contains(c.DSN(), "time_zone") {
		t.Fatalf("DSN options not forced: %s", c.DSN())
	}
}

func TestBadValuesNameTheSetting(t *testing.T) {
	for env, want := range map[string]string{
		"FLASHSALE_PAYMENT_WINDOW=abc":      "FLASHSALE_PAYMENT_WINDOW",
		"FLASHSALE_PAYMENT_WINDOW=10ms":     "FLASHSALE_PAYMENT_WINDOW",
		"FLASHSALE_REDIS_ADDR=nohost":       "FLASHSALE_REDIS_ADDR",
		"FLASHSALE_KAFKA_BROKERS=":          "FLASHSALE_KAFKA_BROKERS",
		"FLASHSALE_MYSQL_DSN=::::":          "FLASHSALE_MYSQL_DSN",
		"FLASHSALE_JWT_SECRET=short":        "FLASHSALE_JWT_SECRET",
		"FLASHSALE_SOLDOUT_TTL=1h":          "FLASHSALE_SOLDOUT_TTL",
		"FLASHSALE_TRUSTED_PROXIES=1.2.3.4": "FLASHSALE_TRUSTED_PROXIES",
		"FLASHSALE_LOG_LEVEL=loud":          "FLASHSALE_LOG_LEVEL",
	} {
		k, v, _ := strings.Cut(env, "=")
		m := map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef", k: v}
		_, _, err := parse(t, m)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to name %s", env, err, want)
		}
		if strings.Contains(env, "DSN") && err != nil && strings.Contains(err.Error(), v) && v != "" {
			t.Errorf("DSN value leaked into the error: %v", err)
		}
	}
}

func TestNamesCoverEveryComponent(t *testing.T) {
	names := strings.Join(Names(&Common{}, &Ingress{}, &Consumer{}, &Reaper{}, &Setup{}), " ")
	for _, want := range []string{"FLASHSALE_MYSQL_DSN", "FLASHSALE_REDIS_ADDR", "FLASHSALE_KAFKA_BROKERS", "FLASHSALE_HTTP_ADDR",
		"FLASHSALE_METRICS_ADDR", "FLASHSALE_JWT_SECRET", "FLASHSALE_PAYMENT_WINDOW", "FLASHSALE_ORPHAN_GRACE", "FLASHSALE_TOPIC_PARTITIONS"} {
		if !strings.Contains(names, want) {
			t.Errorf("setting %s missing", want)
		}
	}
}
