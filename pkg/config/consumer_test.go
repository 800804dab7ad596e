package config

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// The group session timeout is bounded by what Kafka's brokers accept by
// default (6s to 30m): outside it the consumer would start, and then fail
// every JoinGroup. Heartbeats stay a tenth of the session, at most 3 s.
func TestGroupSessionTimeout(t *testing.T) {
	for _, tc := range []struct {
		env                           string
		refused                       bool
		heartbeat, session, rebalance time.Duration
	}{
		{"", false, 3 * time.Second, 30 * time.Second, 30 * time.Second}, // kafka-go's defaults
		{"6s", false, 600 * time.Millisecond, 6 * time.Second, 6 * time.Second},
		{"2m", false, 3 * time.Second, 2 * time.Minute, 2 * time.Minute},
		{"5s", true, 0, 0, 0},
		{"31m", true, 0, 0, 0},
	} {
		t.Run("session="+tc.env, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("FLASHSALE_GROUP_SESSION_TIMEOUT", tc.env)
			}
			var c Common
			var cc Consumer
			err := Parse(flag.NewFlagSet("consumer", flag.ContinueOnError), nil, &c, &cc)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "FLASHSALE_GROUP_SESSION_TIMEOUT") {
					t.Fatalf("err = %v, want a refusal naming FLASHSALE_GROUP_SESSION_TIMEOUT", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h, s, r := cc.GroupTimeouts(); h != tc.heartbeat || s != tc.session || r != tc.rebalance {
				t.Fatalf("heartbeat %v, session %v, rebalance %v; want %v, %v, %v", h, s, r, tc.heartbeat, tc.session, tc.rebalance)
			}
		})
	}
}

// A deployment's name goes into the Kafka names left at their defaults;
// names set explicitly are kept; a name that cannot sit inside a key or a
// topic name is refused.
func TestDeploymentNamesKafka(t *testing.T) {
	for _, tc := range []struct {
		env                map[string]string
		refused            bool
		orders, dlq, group string
	}{
		{map[string]string{}, false, "flashsale.orders.v1", "flashsale.orders.dlq.v1", "flashsale-order-writers"},
		{map[string]string{"FLASHSALE_DEPLOYMENT": "staging"}, false, "flashsale.staging.orders.v1", "flashsale.staging.orders.dlq.v1", "flashsale-staging-order-writers"},
		{map[string]string{"FLASHSALE_DEPLOYMENT": "staging", "FLASHSALE_ORDERS_TOPIC": "mine"}, false, "mine", "flashsale.staging.orders.dlq.v1", "flashsale-staging-order-writers"},
		{map[string]string{"FLASHSALE_DEPLOYMENT": "Staging"}, true, "", "", ""},
		{map[string]string{"FLASHSALE_DEPLOYMENT": "a:b"}, true, "", "", ""},
		{map[string]string{"FLASHSALE_DEPLOYMENT": "-x"}, true, "", "", ""},
		{map[string]string{"FLASHSALE_DEPLOYMENT": strings.Repeat("a", 33)}, true, "", "", ""},
	} {
		t.Run(tc.env["FLASHSALE_DEPLOYMENT"]+tc.env["FLASHSALE_ORDERS_TOPIC"], func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var c Common
			err := Parse(flag.NewFlagSet("x", flag.ContinueOnError), nil, &c)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "FLASHSALE_DEPLOYMENT") {
					t.Fatalf("err = %v, want a refusal naming FLASHSALE_DEPLOYMENT", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.OrdersTopic != tc.orders || c.DLQTopic != tc.dlq || c.ConsumerGroup != tc.group {
				t.Fatalf("topics %q %q, group %q; want %q %q %q", c.OrdersTopic, c.DLQTopic, c.ConsumerGroup, tc.orders, tc.dlq, tc.group)
			}
		})
	}
}
