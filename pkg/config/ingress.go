package config

import (
	"crypto/x509"
	"flag"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
)

// Ingress holds the HTTP front door's settings.
type Ingress struct {
	// HTTPAddr serves the API, /healthz, /openapi.yaml and the operators' console
	// (/admin/console).
	HTTPAddr string
	// MetricsAddr serves /healthz, /readyz and /metrics on a listener of
	// their own, so anonymous callers of the public port cannot make the
	// ingress ping its dependencies or render its metrics.
	MetricsAddr string
	// JWT is the bearer tokens' settings, FLASHSALE_JWT_* (pkg/config/jwtconfig,
	// where flashsalectl token reads them without linking a store driver):
	// in.JWTSecret and the rest read as the ingress's own.
	jwtconfig.JWT
	// PublishTimeout bounds one synchronous Kafka publish; past it the request
	// is aborted through the arbiter and the buyer gets 503.
	PublishTimeout time.Duration
	// PublishBatchTimeout, PublishBatchSize and PublishBatchBytes are how
	// the Kafka writer coalesces concurrent synchronous publishes (a batch
	// leaves when its timeout ends or it is full); PublishCompression is
	// its codec. Each request still waits for its batch's acks.
	PublishBatchTimeout time.Duration
	PublishBatchSize    int
	PublishBatchBytes   int
	PublishCompression  string
	// SoldOutTTL is how long a sold-out answer is served from memory.
	SoldOutTTL time.Duration
	// UserRateLimit is admissions per user per item per second (0 = off).
	UserRateLimit int
	// IPRateLimit is requests per client IP per second (0 = off).
	IPRateLimit int
	// TrustedProxies lists CIDRs whose X-Forwarded-For is believed.
	TrustedProxies string
	// AdmissionRPS caps admissions per second in this process (0 = off):
	// excess load is shed with 503 before Redis and Kafka saturate.
	AdmissionRPS int
	// IdempotencyTTL is how long an Idempotency-Key's first answer is kept.
	IdempotencyTTL time.Duration
	// RedisWaitReplicas, when above 0, makes each admission wait (Redis
	// WAIT) until that many replicas of the item's primary have its
	// reservation, so it survives a failover; RedisWaitTimeout bounds it.
	RedisWaitReplicas int
	// RedisBatch coalesces the hot path's Redis calls (redisbatch.go).
	RedisBatch RedisBatching
	// Buckets: stock bucket settings (buckets.go).
	Buckets          Buckets
	RedisWaitTimeout time.Duration
	// RedisMoveWait is how long an admission or a ticket's take (the
	// waiting room) waits out a Redis Cluster
	// reshard of its item's slot, retrying the script the cluster refused
	// before running it (TRYAGAIN, ASK, MOVED), instead of answering 503
	// at once; 0 = no wait.
	RedisMoveWait time.Duration
	// StatusWaitMax caps GET /api/v1/orders/{request_id}?wait= (longer
	// waits are cut to it); 0 switches waiting off (every poll answers at
	// once). The HTTP write timeout grows by it.
	StatusWaitMax time.Duration
	// QueueGrantTTL is how long an admission grant (pkg/waitroom) stays good:
	// every read of an admitted ticket hands out a fresh one, so it only
	// needs to outlast the buyer's next request, and a copied grant dies
	// with it.
	QueueGrantTTL time.Duration
	// StatusWaiters bounds the polls waiting at once in this process; past
	// it a poll with wait answers at once, like a plain poll.
	StatusWaiters int
	// StatusRecheck is how often a waiting poll reads its status again
	// without an announcement: the shard channel's announcements are
	// fire-and-forget (one stored while the item's slot migrates is sent
	// where no ingress listens; a failover drops those in flight), so this
	// bounds how late a poll can answer after its status changed. 0
	// switches it off (announcements only).
	StatusRecheck time.Duration
	// TallyFlush is how often this replica adds its order-answer counts to
	// Redis (pkg/tally) for the live sale console: a read of
	// /api/v1/admin/items/{id}/live lags the answers by at most this.
	// Shorter costs Redis one pipelined call per replica more often.
	TallyFlush time.Duration
}

// RegisterFlags implements Registerer.
func (c *Ingress) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8080", "ingress listen address host:port")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9103", "ops listen address host:port for /healthz, /readyz, /metrics (keep it off the public network)")
	c.JWT.RegisterFlags(fs)
	fs.DurationVar(&c.PublishTimeout, "publish-timeout", 3*time.Second, "Kafka publish timeout, a Go duration such as 3s")
	fs.DurationVar(&c.PublishBatchTimeout, "publish-batch-timeout", 10*time.Millisecond, "how long a Kafka batch waits for more publishes before it is sent, a Go duration from 100us to 1s")
	fs.IntVar(&c.PublishBatchSize, "publish-batch-size", 256, "most messages in one Kafka batch, 1 to 100000 (kafka-go allocates every batch at this size)")
	fs.IntVar(&c.PublishBatchBytes, "publish-batch-bytes", 1<<20, "most bytes in one Kafka batch, 1024 to 1048576 (the broker's message.max.bytes)")
	fs.StringVar(&c.PublishCompression, "publish-compression", "none", "Kafka batch compression: none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&c.SoldOutTTL, "soldout-ttl", 500*time.Millisecond, "how long a sold-out item is answered from memory, a Go duration up to 10s")
	fs.IntVar(&c.UserRateLimit, "user-rate-limit", 5, "order attempts per user per item per second, 0 to switch off")
	fs.IntVar(&c.IPRateLimit, "ip-rate-limit", 0, "requests per client IP per second, 0 to switch off")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", "", "comma-separated CIDRs whose X-Forwarded-For is trusted")
	fs.IntVar(&c.AdmissionRPS, "admission-rps", 0, "admissions per second this process accepts before shedding with 503, 0 to switch off")
	fs.DurationVar(&c.IdempotencyTTL, "idempotency-ttl", 24*time.Hour, "how long an Idempotency-Key answer is kept, a Go duration")
	c.RedisBatch.RegisterFlags(fs)
	c.Buckets.RegisterFlags(fs)
	fs.IntVar(&c.RedisWaitReplicas, "redis-wait-replicas", 0, "replicas that must have an admission's reservation before the ingress goes on (Redis WAIT), 0 to switch off")
	fs.DurationVar(&c.RedisWaitTimeout, "redis-wait-timeout", 100*time.Millisecond, "how long an admission waits for FLASHSALE_REDIS_WAIT_REPLICAS, a Go duration")
	fs.DurationVar(&c.RedisMoveWait, "redis-move-wait", 5*time.Second, "how long an admission or a ticket's take waits out a Redis Cluster reshard of its item's slot before answering 503, a Go duration up to 1m, 0 to answer 503 at once")
	fs.DurationVar(&c.QueueGrantTTL, "queue-grant-ttl", 30*time.Second, "how long an admission grant of a queued item stays good, a Go duration from 1s to 10m")
	fs.DurationVar(&c.StatusWaitMax, "status-wait-max", 30*time.Second, "longest wait a status poll or an order may ask for with ?wait=, a Go duration up to 2m, 0 to switch waiting off")
	fs.IntVar(&c.StatusWaiters, "status-waiters", 10_000, "status polls and orders that may wait at once in this process; past it they answer at once")
	fs.DurationVar(&c.TallyFlush, "tally-flush", time.Second, "how often the order-answer counts of the live sale console are added to Redis, a Go duration from 50ms to 1m")
	fs.DurationVar(&c.StatusRecheck, "status-recheck", 750*time.Millisecond, "how often a waiting status poll reads its status again if no announcement came, a Go duration from 100ms, 0 to rely on announcements alone")
}

// Validate implements Registerer.
func (c *Ingress) Validate() error {
	if err := hostPorts(c.HTTPAddr); err != nil {
		return fmt.Errorf("FLASHSALE_HTTP_ADDR: %v (expected host:port)", err)
	}
	if err := hostPorts(c.MetricsAddr); err != nil {
		return fmt.Errorf("FLASHSALE_METRICS_ADDR: %v (expected host:port)", err)
	}
	if c.MetricsAddr == c.HTTPAddr {
		return fmt.Errorf("FLASHSALE_METRICS_ADDR: %s is FLASHSALE_HTTP_ADDR too (expected an ops address of its own)", c.MetricsAddr)
	}
	if err := c.JWT.Validate(); err != nil {
		return err
	}
	if c.JWTJWKSURL != "" { // the JWK Set's CA file: read here, with the other TLS files
		if _, err := c.JWKSRootCAs(); err != nil {
			return err
		}
	}
	if c.PublishTimeout <= 0 {
		return fmt.Errorf("FLASHSALE_PUBLISH_TIMEOUT: %v (expected a positive duration)", c.PublishTimeout)
	}
	if err := c.validatePublishBatching(); err != nil {
		return err
	}
	if c.QueueGrantTTL < time.Second || c.QueueGrantTTL > 10*time.Minute {
		return fmt.Errorf("FLASHSALE_QUEUE_GRANT_TTL: %v (expected a duration from 1s to 10m)", c.QueueGrantTTL)
	}
	if c.SoldOutTTL < 0 || c.SoldOutTTL > 10*time.Second {
		return fmt.Errorf("FLASHSALE_SOLDOUT_TTL: %v (expected a duration from 0 to 10s)", c.SoldOutTTL)
	}
	if c.UserRateLimit < 0 || c.IPRateLimit < 0 || c.AdmissionRPS < 0 {
		return fmt.Errorf("FLASHSALE_USER_RATE_LIMIT, FLASHSALE_IP_RATE_LIMIT, FLASHSALE_ADMISSION_RPS: expected 0 or a positive integer")
	}
	if _, err := ParseCIDRs(c.TrustedProxies); err != nil {
		return fmt.Errorf("FLASHSALE_TRUSTED_PROXIES: %v (expected comma-separated CIDRs)", err)
	}
	if err := c.Buckets.Validate(); err != nil {
		return err
	}
	if err := c.RedisBatch.Validate(); err != nil {
		return err
	}
	if c.RedisWaitReplicas < 0 || c.RedisWaitReplicas > 5 {
		return fmt.Errorf("FLASHSALE_REDIS_WAIT_REPLICAS: %d (expected 0 to switch off, or 1 to 5)", c.RedisWaitReplicas)
	}
	if c.RedisWaitReplicas > 0 && (c.RedisWaitTimeout < time.Millisecond || c.RedisWaitTimeout > 10*time.Second) {
		return fmt.Errorf("FLASHSALE_REDIS_WAIT_TIMEOUT: %v (expected 1ms to 10s)", c.RedisWaitTimeout)
	}
	if c.RedisMoveWait < 0 || c.RedisMoveWait > time.Minute {
		return fmt.Errorf("FLASHSALE_REDIS_MOVE_WAIT: %v (expected 0 to answer 503 at once, or up to 1m)", c.RedisMoveWait)
	}
	if c.StatusWaitMax < 0 || c.StatusWaitMax > 2*time.Minute {
		return fmt.Errorf("FLASHSALE_STATUS_WAIT_MAX: %v (expected 0 to switch waiting off, or up to 2m)", c.StatusWaitMax)
	}
	if c.StatusWaiters < 0 || c.StatusWaiters > 1_000_000 {
		return fmt.Errorf("FLASHSALE_STATUS_WAITERS: %d (expected 0 to 1000000)", c.StatusWaiters)
	}
	if c.StatusRecheck != 0 && (c.StatusRecheck < 100*time.Millisecond || c.StatusRecheck > time.Minute) {
		return fmt.Errorf("FLASHSALE_STATUS_RECHECK: %v (expected 0 to switch it off, or 100ms to 1m)", c.StatusRecheck)
	}
	if c.TallyFlush < 50*time.Millisecond || c.TallyFlush > time.Minute {
		return fmt.Errorf("FLASHSALE_TALLY_FLUSH: %v (expected a duration from 50ms to 1m)", c.TallyFlush)
	}
	if c.IdempotencyTTL < time.Minute {
		return fmt.Errorf("FLASHSALE_IDEMPOTENCY_TTL: %v (expected at least 1m)", c.IdempotencyTTL)
	}
	return nil
}

// validatePublishBatching checks the Kafka writer's batching. A zero timeout
// or size is refused rather than passed on: kafka-go reads 0 as its own
// defaults, a batch timeout of 1 s.
func (c *Ingress) validatePublishBatching() error {
	if c.PublishBatchTimeout < 100*time.Microsecond || c.PublishBatchTimeout > time.Second {
		return fmt.Errorf("FLASHSALE_PUBLISH_BATCH_TIMEOUT: %v (expected a duration from 100us to 1s)", c.PublishBatchTimeout)
	}
	if c.PublishBatchTimeout >= c.PublishTimeout {
		return fmt.Errorf("FLASHSALE_PUBLISH_BATCH_TIMEOUT: %v (expected less than FLASHSALE_PUBLISH_TIMEOUT, %v)", c.PublishBatchTimeout, c.PublishTimeout)
	}
	if c.PublishBatchSize < 1 || c.PublishBatchSize > 100_000 {
		return fmt.Errorf("FLASHSALE_PUBLISH_BATCH_SIZE: %d (expected 1 to 100000)", c.PublishBatchSize)
	}
	if c.PublishBatchBytes < 1024 || c.PublishBatchBytes > 1<<20 {
		return fmt.Errorf("FLASHSALE_PUBLISH_BATCH_BYTES: %d (expected 1024 to 1048576)", c.PublishBatchBytes)
	}
	switch c.PublishCompression {
	case "none", "gzip", "snappy", "lz4", "zstd":
		return nil
	}
	return fmt.Errorf("FLASHSALE_PUBLISH_COMPRESSION: %q (expected none, gzip, snappy, lz4 or zstd)", c.PublishCompression)
}

// JWKSRootCAs returns the CAs that verify the identity provider's
// certificate: those of JWTJWKSCAFile, or nil for the system's roots.
func (c *Ingress) JWKSRootCAs() (*x509.CertPool, error) {
	if c.JWTJWKSCAFile == "" {
		return nil, nil
	}
	cfg, err := tlsFiles{prefix: "FLASHSALE_JWT_JWKS", ca: c.JWTJWKSCAFile}.load()
	if err != nil {
		return nil, err
	}
	return cfg.RootCAs, nil
}
