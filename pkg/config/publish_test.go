package config

import (
	"strings"
	"testing"
	"time"
)

// TestPublishBatching: the Kafka writer's batching has working defaults, is
// settable, and refuses what kafka-go would silently read as its own
// defaults (0 = a 1 s batch timeout) or the broker would refuse.
func TestPublishBatching(t *testing.T) {
	secret := map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef"}
	_, in, err := parse(t, secret)
	if err != nil {
		t.Fatal(err)
	}
	if in.PublishBatchTimeout != 10*time.Millisecond || in.PublishBatchSize != 256 || in.PublishBatchBytes != 1<<20 || in.PublishCompression != "none" {
		t.Fatalf("defaults: timeout %v size %d bytes %d compression %q", in.PublishBatchTimeout, in.PublishBatchSize, in.PublishBatchBytes, in.PublishCompression)
	}
	with := func(kv ...string) map[string]string {
		env := map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef"}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	_, in, err = parse(t, with("FLASHSALE_PUBLISH_BATCH_TIMEOUT", "500us", "FLASHSALE_PUBLISH_BATCH_SIZE", "100",
		"FLASHSALE_PUBLISH_BATCH_BYTES", "65536", "FLASHSALE_PUBLISH_COMPRESSION", "lz4"))
	if err != nil {
		t.Fatal(err)
	}
	if in.PublishBatchTimeout != 500*time.Microsecond || in.PublishBatchSize != 100 || in.PublishBatchBytes != 65536 || in.PublishCompression != "lz4" {
		t.Fatalf("set: %+v", in)
	}
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"zero timeout":             {with("FLASHSALE_PUBLISH_BATCH_TIMEOUT", "0s"), "FLASHSALE_PUBLISH_BATCH_TIMEOUT"},
		"long timeout":             {with("FLASHSALE_PUBLISH_BATCH_TIMEOUT", "2s"), "FLASHSALE_PUBLISH_BATCH_TIMEOUT"},
		"timeout >= publish bound": {with("FLASHSALE_PUBLISH_BATCH_TIMEOUT", "500ms", "FLASHSALE_PUBLISH_TIMEOUT", "500ms"), "FLASHSALE_PUBLISH_TIMEOUT"},
		"zero size":                {with("FLASHSALE_PUBLISH_BATCH_SIZE", "0"), "FLASHSALE_PUBLISH_BATCH_SIZE"},
		"tiny bytes":               {with("FLASHSALE_PUBLISH_BATCH_BYTES", "100"), "FLASHSALE_PUBLISH_BATCH_BYTES"},
		"bytes above the broker":   {with("FLASHSALE_PUBLISH_BATCH_BYTES", "2000000"), "FLASHSALE_PUBLISH_BATCH_BYTES"},
		"unknown codec":            {with("FLASHSALE_PUBLISH_COMPRESSION", "brotli"), "FLASHSALE_PUBLISH_COMPRESSION"},
		"codec by number":          {with("FLASHSALE_PUBLISH_COMPRESSION", "3"), "FLASHSALE_PUBLISH_COMPRESSION"},
	} {
		if _, _, err := parse(t, c.env); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %s", name, err, c.want)
		}
	}
}
