package stock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// NewClient returns a Redis client for addrs: one address is a single node,
// several are Redis Cluster seeds. Every call is bounded by timeout, and the
// pool is sized for a burst of concurrent handlers.
//
// ContextTimeoutEnabled makes a call's context deadline bound the socket
// reads and writes (the earlier of it and now + timeout). Without it go-redis
// hands the connection context.Background() and sets each reply read's
// deadline to now + ReadTimeout: a caller's shorter deadline (the IP
// limiter's quarter of the store timeout) was ignored, and against a stalled
// Redis (connected, never answering) a pipeline or several calls under one
// deadline took a multiple of the timeout. The cost: a call cut by its
// deadline closes its connection, so a stall means redials, which a stalled
// server needs anyway. A cancelled context without a deadline still does not
// interrupt a read already on the wire.
//
// NewClient is plaintext without a password, its mode the auto rule
// (cluster when several addresses); the deployables use NewClientFrom.
func NewClient(addrs []string, timeout time.Duration, poolSize int) redis.UniversalClient {
	mode := "single"
	if len(addrs) > 1 {
		mode = "cluster"
	}
	return NewClientFrom(config.RedisConn{Addrs: addrs, Mode: mode}, timeout, poolSize)
}

// NewClientFrom is the one constructor of the Redis clients: conn (from
// config.Common.RedisConn: FLASHSALE_REDIS_*) picks a single node, Redis
// Cluster (one seed is enough: a configuration endpoint) or a master found
// through Sentinel (go-redis' failover client; the addresses are the
// sentinels'), with its ACL login and TLS; timeout and poolSize are as
// NewClient's.
func NewClientFrom(conn config.RedisConn, timeout time.Duration, poolSize int) redis.UniversalClient {
	opt := &redis.UniversalOptions{
		Addrs:                 conn.Addrs,
		DB:                    conn.DB,
		Username:              conn.Username,
		Password:              conn.Password,
		TLSConfig:             conn.TLS, // for go-redis' own decisions; dialer does the TLS
		Dialer:                dialer(conn.TLS, timeout),
		MasterName:            conn.SentinelMaster,
		SentinelPassword:      conn.SentinelPassword,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              poolSize,
		PoolTimeout:           timeout,
		MaxRetries:            1,
		// One dial per attempt. go-redis' default (5 dials, 100 ms apart)
		// turns a refused connection, which certainly sent nothing and is
		// answered "unavailable", into half a second of waiting that runs
		// past the caller's deadline and becomes an ambiguous timeout.
		DialerRetries: 1,
	}
	switch conn.Mode {
	case "sentinel":
		return redis.NewFailoverClient(opt.Failover())
	case "cluster":
	default:
		// A single node is never asked CLUSTER SLOTS.
		return redis.NewClient(opt.Simple())
	}
	c := opt.Cluster()
	c.ClusterStateReloadInterval = clusterStateReload
	return redis.NewClusterClient(c)
}

// clusterStateReload bounds how long a Cluster client keeps sending a slot's
// commands to a primary that died. go-redis reloads the slot map on MOVED,
// but a dead primary answers nothing, only refused dials, which reload
// nothing; its default interval (60 s) kept every admission of the slot
// failing for up to a minute after the replica had been promoted (about
// 6 s: faults/redis_cluster_test.go). The reload is lazy (only a client in
// use asks CLUSTER SLOTS, at most once a second), so this costs nothing idle.
const clusterStateReload = time.Second

// dialer connects, and with tc does the TLS handshake itself, bounded by
// the dial's context, so a handshake failure (a plaintext port answers a
// ClientHello with nothing) is told from an unreachable server:
// handshakeError. ServerName is tc's, else the dialed host.
func dialer(tc *tls.Config, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := nd.DialContext(ctx, network, addr)
		if err != nil || tc == nil {
			return c, err
		}
		cfg := tc.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(hctx); err != nil {
			_ = c.Close()
			return nil, &handshakeError{addr: addr, err: err}
		}
		return tc, nil
	}
}

// handshakeError is a TLS handshake that failed or did not finish in time.
type handshakeError struct {
	addr string
	err  error
}

func (e *handshakeError) Error() string { return "tls handshake with " + e.addr + ": " + e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

// Check pings Redis through rdb at start-up and names the setting behind a
// failure that settings cause (a refused login, an untrusted certificate,
// TLS spoken to a plaintext port, cluster mode against a plain node), as
// one line marked config.ErrRefused that start-up stops on; other errors
// (an unreachable server) come back with the address.
//
// With TLS, a first connection of its own does the handshake within half
// of ctx: a plaintext port answers a ClientHello with nothing, and the
// handshake's timeout is the one sign of it, which a Ping bounded by the
// same ctx would report as its own timeout.
func Check(ctx context.Context, rdb redis.UniversalClient, conn config.RedisConn) error {
	if conn.TLS != nil && len(conn.Addrs) > 0 {
		half := 2 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			half = time.Until(dl) / 2
		}
		c, err := dialer(conn.TLS, half)(ctx, "tcp", conn.Addrs[0])
		if err != nil {
			return Explain(conn, err)
		}
		_ = c.Close()
	}
	err := rdb.Ping(ctx).Err()
	if err == nil {
		return nil
	}
	return Explain(conn, err)
}

// Explain is Check's naming of the setting behind err.
func Explain(conn config.RedisConn, err error) error {
	server := strings.Join(conn.Addrs, ",")
	msg := err.Error()
	user := conn.Username
	if user == "" {
		user = "default"
	}
	sentinel := conn.Mode == "sentinel" && strings.Contains(msg, "sentinel")
	switch {
	case strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "invalid password") || strings.Contains(msg, "invalid username-password"):
		if sentinel {
			return config.Refused("FLASHSALE_REDIS_SENTINEL_PASSWORD", "%s: the sentinels refused the password: %s", server, redactAll(msg, conn))
		}
		return config.Refused("FLASHSALE_REDIS_PASSWORD", "%s: refused the login of user %s: %s", server, user, redactAll(msg, conn))
	case strings.Contains(msg, "NOAUTH"):
		return config.Refused("FLASHSALE_REDIS_PASSWORD", "%s: requires a password, none set: %s", server, msg)
	case strings.Contains(msg, "NOPERM"):
		return config.Refused("FLASHSALE_REDIS_USERNAME", "%s: user %s may not run flashsale's commands: %s", server, user, msg)
	case strings.Contains(msg, "cluster support disabled"):
		return config.Refused("FLASHSALE_REDIS_MODE", "%s: cluster, but the server is not a Redis Cluster node (expected single)", server)
	case conn.Mode == "sentinel" && errors.Is(err, redis.Nil):
		return config.Refused("FLASHSALE_REDIS_SENTINEL_MASTER", "%s: no sentinel knows master %q", server, conn.SentinelMaster)
	}
	var hs *handshakeError
	if errors.As(err, &hs) {
		server = hs.addr
	}
	if setting, detail, ok := config.TLSCause("FLASHSALE_REDIS_TLS", conn.TLS != nil, err); ok {
		return config.Refused(setting, "%s: %s", server, detail)
	}
	if hs != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)) {
		return config.Refused("FLASHSALE_REDIS_TLS", "%s: no answer to the TLS handshake in time (a plaintext port?)", server)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("redis %s: no answer in time: %w", server, oneLine{err})
	}
	return fmt.Errorf("redis %s: %w", server, oneLine{err})
}

// oneLine is err on one line (errors.Join puts each on its own: one per
// sentinel or seed).
type oneLine struct{ err error }

func (o oneLine) Error() string { return strings.ReplaceAll(o.err.Error(), "\n", "; ") }
func (o oneLine) Unwrap() error { return o.err }

func redactAll(msg string, conn config.RedisConn) string {
	for _, s := range []string{conn.Password, conn.SentinelPassword} {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
		}
	}
	return msg
}

// StartupCheck is Check within timeout as a deployable's start-up runs
// it: only an error the settings caused (config.ErrRefused) is returned,
// for start-up to stop on; a Redis that is merely unreachable is left to
// the readiness check and the retries, as before.
func StartupCheck(ctx context.Context, rdb redis.UniversalClient, conn config.RedisConn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := Check(ctx, rdb, conn); errors.Is(err, config.ErrRefused) {
		return err
	}
	return nil
}
