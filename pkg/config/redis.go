package config

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Redis holds how the Redis client connects beyond FLASHSALE_REDIS_ADDR:
// a URL (managed Redis hands out rediss://user:pass@host:port), the
// topology, ACL credentials and TLS.
type Redis struct {
	// URL is redis:// or rediss:// (TLS) user:password@host:port[/db],
	// with further seeds as ?addr=host:port (as go-redis reads them). It
	// replaces FLASHSALE_REDIS_ADDR; setting both is refused.
	URL string
	// Mode is auto (cluster when there are several addresses, sentinel
	// when SentinelMaster is set, else single), single, cluster (also
	// behind one configuration endpoint) or sentinel.
	Mode string
	// Username and Password are the ACL login (AUTH); they win over the
	// URL's. Never logged.
	Username string
	Password string
	// TLS turns TLS on (implied by rediss:// and by TLSCAFile).
	TLS                                bool
	TLSCAFile, TLSCertFile, TLSKeyFile string
	// SentinelMaster is the master name the sentinels watch; the addresses
	// are then the sentinels'. SentinelPassword is the sentinels' own
	// AUTH password.
	SentinelMaster   string
	SentinelPassword string
}

// RegisterFlags implements Registerer.
func (r *Redis) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&r.URL, "redis-url", "", "redis:// or rediss:// URL user:password@host:port[/db][?addr=host:port...], instead of -redis-addr")
	fs.StringVar(&r.Mode, "redis-mode", "auto", "Redis topology: auto (cluster when several addresses), single, cluster or sentinel")
	fs.StringVar(&r.Username, "redis-username", "", "Redis ACL user, empty for the default user")
	fs.StringVar(&r.Password, "redis-password", "", "Redis password (or FLASHSALE_REDIS_PASSWORD_FILE)")
	fs.BoolVar(&r.TLS, "redis-tls", false, "connect to Redis over TLS: true or false")
	fs.StringVar(&r.TLSCAFile, "redis-tls-ca-file", "", "PEM file of the CAs of Redis' certificate (implies TLS), empty for the system's")
	fs.StringVar(&r.TLSCertFile, "redis-tls-cert-file", "", "PEM client certificate for Redis, with -redis-tls-key-file")
	fs.StringVar(&r.TLSKeyFile, "redis-tls-key-file", "", "PEM key of the Redis client certificate")
	fs.StringVar(&r.SentinelMaster, "redis-sentinel-master", "", "master name watched by the sentinels (mode sentinel; the addresses are the sentinels')")
	fs.StringVar(&r.SentinelPassword, "redis-sentinel-password", "", "password of the Redis sentinels, empty for none")
}

// Validate implements Registerer; the rules that involve
// FLASHSALE_REDIS_ADDR are in Common.Validate.
func (r *Redis) Validate() error {
	r.Mode = strings.ToLower(strings.TrimSpace(r.Mode))
	switch r.Mode {
	case "auto", "single", "cluster", "sentinel":
	default:
		return fmt.Errorf("FLASHSALE_REDIS_MODE: %q (expected auto, single, cluster or sentinel)", r.Mode)
	}
	if r.Mode == "sentinel" && r.SentinelMaster == "" {
		return fmt.Errorf("FLASHSALE_REDIS_SENTINEL_MASTER: empty (FLASHSALE_REDIS_MODE sentinel needs the master's name)")
	}
	if r.SentinelMaster != "" && r.Mode != "sentinel" && r.Mode != "auto" {
		return fmt.Errorf("FLASHSALE_REDIS_SENTINEL_MASTER: set, but FLASHSALE_REDIS_MODE is %s (expected sentinel)", r.Mode)
	}
	if r.URL != "" {
		if _, err := parseRedisURL(r.URL); err != nil {
			return err
		}
	}
	return nil
}

// RedisConn is the resolved Redis connection: what stock.NewClient needs.
type RedisConn struct {
	Addrs []string
	// Mode is single, cluster or sentinel (never auto).
	Mode             string
	DB               int
	Username         string
	Password         string
	TLS              *tls.Config // nil: plaintext
	SentinelMaster   string
	SentinelPassword string
}

// redisURL is what a FLASHSALE_REDIS_URL says.
type redisURL struct {
	addrs          []string
	tls            bool
	user, password string
	db             int
}

// parseRedisURL reads s as go-redis' ParseURL/ParseClusterURL do (scheme,
// user info, host:port, /db, ?addr=); errors never show the password.
func parseRedisURL(s string) (redisURL, error) {
	var out redisURL
	u, err := url.Parse(s)
	if err != nil {
		return out, fmt.Errorf("FLASHSALE_REDIS_URL: not a URL (expected redis[s]://[user:password@]host:port[/db])")
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		out.tls = true
	default:
		return out, fmt.Errorf("FLASHSALE_REDIS_URL: scheme %q (expected redis or rediss)", u.Scheme)
	}
	if u.User != nil {
		out.user = u.User.Username()
		out.password, _ = u.User.Password()
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return out, fmt.Errorf("FLASHSALE_REDIS_URL: no host (expected redis[s]://[user:password@]host:port[/db])")
	}
	if port == "" {
		port = "6379"
	}
	out.addrs = []string{net.JoinHostPort(host, port)}
	if p := strings.Trim(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 {
			return out, fmt.Errorf("FLASHSALE_REDIS_URL: database %q (expected /0, /1, ...)", p)
		}
		out.db = db
	}
	for k, vs := range u.Query() {
		if k != "addr" {
			return out, fmt.Errorf("FLASHSALE_REDIS_URL: parameter %q (only addr=host:port is read; the other settings have FLASHSALE_REDIS_* of their own)", k)
		}
		for _, v := range vs {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return out, fmt.Errorf("FLASHSALE_REDIS_URL: addr=%q: %v", v, err)
			}
			out.addrs = append(out.addrs, v)
		}
	}
	return out, nil
}

// RedisConn resolves the Redis settings into one connection description.
// Call it after Validate.
func (c *Common) RedisConn() RedisConn {
	r := c.Redis
	conn := RedisConn{Addrs: split(c.RedisAddr), Username: r.Username, Password: r.Password,
		SentinelMaster: r.SentinelMaster, SentinelPassword: r.SentinelPassword}
	useTLS := r.TLS || r.TLSCAFile != "" || r.TLSCertFile != ""
	if r.URL != "" {
		if u, err := parseRedisURL(r.URL); err == nil {
			conn.Addrs, conn.DB = u.addrs, u.db
			useTLS = useTLS || u.tls
			if conn.Username == "" {
				conn.Username = u.user
			}
			if conn.Password == "" {
				conn.Password = u.password
			}
		}
	}
	switch conn.Mode = r.Mode; {
	case conn.Mode == "auto" && r.SentinelMaster != "":
		conn.Mode = "sentinel"
	case conn.Mode == "auto" && len(conn.Addrs) > 1:
		conn.Mode = "cluster"
	case conn.Mode == "auto" || conn.Mode == "":
		conn.Mode = "single"
	}
	if useTLS {
		var host string
		if len(conn.Addrs) > 0 {
			host, _, _ = net.SplitHostPort(conn.Addrs[0])
		}
		conn.TLS, _ = tlsFiles{prefix: "FLASHSALE_REDIS_TLS", ca: r.TLSCAFile, cert: r.TLSCertFile, key: r.TLSKeyFile, serverName: host}.load()
		if conn.TLS == nil { // Validate has refused the files already
			conn.TLS = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
		}
	}
	return conn
}

// validateRedis checks the Redis settings together with FLASHSALE_REDIS_ADDR.
func (c *Common) validateRedis() error {
	if err := c.Redis.Validate(); err != nil {
		return err
	}
	if c.Redis.URL != "" && c.redisAddr.set {
		return fmt.Errorf("FLASHSALE_REDIS_URL: set together with FLASHSALE_REDIS_ADDR (expected one of them)")
	}
	if c.Redis.URL == "" {
		if err := hostPorts(c.RedisAddr); err != nil {
			return fmt.Errorf("FLASHSALE_REDIS_ADDR: %v (expected host:port[,host:port...])", err)
		}
	}
	conn := c.RedisConn()
	if conn.Mode == "single" && len(conn.Addrs) > 1 {
		return fmt.Errorf("FLASHSALE_REDIS_MODE: single, but %d addresses are given (expected one, or mode cluster or sentinel)", len(conn.Addrs))
	}
	if conn.Mode == "cluster" && conn.DB != 0 {
		return fmt.Errorf("FLASHSALE_REDIS_URL: database %d, but Redis Cluster has database 0 only", conn.DB)
	}
	if c.Redis.TLS || c.Redis.TLSCAFile != "" || c.Redis.TLSCertFile != "" || c.Redis.TLSKeyFile != "" {
		if _, err := (tlsFiles{prefix: "FLASHSALE_REDIS_TLS", ca: c.Redis.TLSCAFile, cert: c.Redis.TLSCertFile, key: c.Redis.TLSKeyFile}).load(); err != nil {
			return err
		}
	}
	return nil
}
