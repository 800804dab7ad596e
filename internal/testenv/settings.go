package testenv

import (
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// CommonFrom returns the shared settings parsed from env alone (not the
// process environment), as config.Parse would: for tests of settings
// other than the stack's.
func CommonFrom(t testing.TB, env map[string]string) config.Common {
	t.Helper()
	var c config.Common
	load(t, &c, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return c
}

// KafkaSecurity is the Security of the FLASHSALE_KAFKA_* settings (nil
// fields, plaintext, on the default stack), as the deployables build it.
func KafkaSecurity(t testing.TB) *orderlog.Security {
	t.Helper()
	sec, err := orderlog.NewSecurity(Common(t).Kafka)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return sec
}
