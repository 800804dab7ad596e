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
		"FLASHSALE_METRICS_ADDR=nohost":     "FLASHSALE_METRICS_ADDR",
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

// TestShippedSecretsRefused: every JWT secret the repository ever shipped as
// a default (compose.yaml, deploy/local/stack.sh) is public, so anyone could
// mint admin tokens with it; the ingress must refuse to start with one.
func TestShippedSecretsRefused(t *testing.T) {
	for _, s := range []string{
		"change-me-in-production-0123456789",    // compose.yaml until issue 11
		"local-dev-secret-change-me-0123456789", // deploy/local/stack.sh until issue 11
		"please-CHANGEME-0123456789abcdef",      // any placeholder of that kind
	} {
		_, _, err := parse(t, map[string]string{"FLASHSALE_JWT_SECRET": s})
		if err == nil || !strings.Contains(err.Error(), "FLASHSALE_JWT_SECRET") {
			t.Errorf("secret %q: err = %v, want it refused naming FLASHSALE_JWT_SECRET", s, err)
		}
		if err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("the refused secret leaked into the error: %v", err)
		}
	}
}

// TestTokenPolicySettings: audience, issuer and lifetime cap are settings
// with safe defaults, and bad values name the setting.
func TestTokenPolicySettings(t *testing.T) {
	_, in, err := parse(t, map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if in.JWTAudience != "flashsale" || in.JWTIssuer != "" || in.JWTMaxTTL != 24*time.Hour {
		t.Fatalf("defaults: audience %q issuer %q max ttl %v", in.JWTAudience, in.JWTIssuer, in.JWTMaxTTL)
	}
	_, in, err = parse(t, map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef",
		"FLASHSALE_JWT_AUDIENCE": "shop", "FLASHSALE_JWT_ISSUER": "https://id.example", "FLASHSALE_JWT_MAX_TTL": "1h"})
	if err != nil || in.JWTAudience != "shop" || in.JWTIssuer != "https://id.example" || in.JWTMaxTTL != time.Hour {
		t.Fatalf("set: %+v %v", in, err)
	}
	for env, want := range map[string]string{
		"FLASHSALE_JWT_AUDIENCE=":    "FLASHSALE_JWT_AUDIENCE",
		"FLASHSALE_JWT_MAX_TTL=0s":   "FLASHSALE_JWT_MAX_TTL",
		"FLASHSALE_JWT_MAX_TTL=-1h":  "FLASHSALE_JWT_MAX_TTL",
		"FLASHSALE_JWT_MAX_TTL=week": "FLASHSALE_JWT_MAX_TTL",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, _, err := parse(t, map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef", k: v})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to name %s", env, err, want)
		}
	}
}
