package config

import (
	"flag"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Common holds the settings every deployable shares: where the three stores are
// and how long to wait for them.
type Common struct {
	// MySQLDSN is a go-sql-driver/mysql DSN. parseTime and UTC are forced on.
	MySQLDSN string
	// RedisAddr is host:port, or a comma-separated list of Redis Cluster seeds.
	RedisAddr string
	// KafkaBrokers is a comma-separated list of host:port bootstrap brokers.
	KafkaBrokers string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogBurst is how many lines of one warning or error message are
	// written per second; the rest are counted in one summary line per
	// second (pkg/logsample). 0 writes every line.
	LogBurst int
	// StoreTimeout bounds every single MySQL and Redis call.
	StoreTimeout time.Duration
	// ShutdownTimeout bounds graceful shutdown; past it the process exits non-zero.
	ShutdownTimeout time.Duration
	// PaymentWindow is how long an order stays payable. Consumer and reaper use it.
	PaymentWindow time.Duration
	// Deployment names this deployment among others that share its Redis
	// and Kafka (a staging pipeline beside production, a demo beside a
	// test run): every Redis key and channel starts "fs:<name>:" instead
	// of "fs:" (stock.UseDeployment), and the Kafka topics and consumer
	// group not set explicitly carry the name. "" (the default) keeps
	// today's names.
	Deployment string
	// OrdersTopic, DLQTopic and ConsumerGroup name the Kafka resources, so
	// two pipelines (a staging sale, a test run) can share one cluster.
	OrdersTopic   string
	DLQTopic      string
	ConsumerGroup string
	// PprofAddr, when set, serves net/http/pprof on its own listener (keep it
	// on loopback): profiles under load without exposing them on the API port.
	PprofAddr string
	// MySQLPassword, when set, replaces the DSN's password, so the DSN can
	// be a non-secret setting and the password a mounted secret file.
	MySQLPassword string
	// MySQLTLSCAFile is a PEM file of the CAs of MySQL's certificate (RDS's
	// bundle): the DSN's tls is then a config verifying against it, with
	// the DSN's host as server name. MySQLTLSCertFile and MySQLTLSKeyFile
	// are an optional client certificate. A DSN's own tls=true,
	// skip-verify or preferred works as before, without these.
	MySQLTLSCAFile   string
	MySQLTLSCertFile string
	MySQLTLSKeyFile  string
	// Kafka is how the Kafka clients connect (TLS, SASL).
	Kafka Kafka
	// Redis is how the Redis client connects (URL, topology, auth, TLS).
	Redis Redis
	// ServerChecks is what an unfit Redis or MySQL server does to start-up.
	ServerChecks ServerChecks

	redisAddr                      trackedString
	ordersTopic, dlqTopic, ccGroup trackedString
}

// The Kafka names of the default deployment.
const (
	defaultOrdersTopic   = "flashsale.orders.v1"
	defaultDLQTopic      = "flashsale.orders.dlq.v1"
	defaultConsumerGroup = "flashsale-order-writers"
)

// RegisterFlags implements Registerer.
func (c *Common) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MySQLDSN, "mysql-dsn", "flashsale:flashsale@tcp(127.0.0.1:3306)/flashsale", "MySQL DSN user:pass@tcp(host:port)/db")
	c.RedisAddr, c.redisAddr = "127.0.0.1:6379", trackedString{p: &c.RedisAddr}
	fs.Var(&c.redisAddr, "redis-addr", "Redis host:port, or a comma-separated Redis Cluster seed list (or sentinels with -redis-mode sentinel)")
	fs.StringVar(&c.KafkaBrokers, "kafka-brokers", "127.0.0.1:9092", "comma-separated Kafka bootstrap brokers host:port")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.IntVar(&c.LogBurst, "log-burst", 10, "lines of one warning or error message written per second, the rest counted in a summary line; 0 writes all")
	fs.DurationVar(&c.StoreTimeout, "store-timeout", 2*time.Second, "timeout of one MySQL or Redis call, a Go duration such as 2s")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 20*time.Second, "graceful shutdown deadline, a Go duration such as 20s")
	fs.DurationVar(&c.PaymentWindow, "payment-window", 15*time.Minute, "how long an order may be paid, a Go duration such as 15m")
	fs.StringVar(&c.Deployment, "deployment", "", "name of this deployment among others on the same Redis and Kafka: keys fs:<name>:..., topics and group carry it; empty keeps the default names")
	c.OrdersTopic, c.ordersTopic = defaultOrdersTopic, trackedString{p: &c.OrdersTopic}
	fs.Var(&c.ordersTopic, "orders-topic", "Kafka topic of admitted orders (default "+defaultOrdersTopic+", flashsale.<deployment>.orders.v1 with a deployment name)")
	c.DLQTopic, c.dlqTopic = defaultDLQTopic, trackedString{p: &c.DLQTopic}
	fs.Var(&c.dlqTopic, "dlq-topic", "Kafka dead-letter topic of the order writers (default "+defaultDLQTopic+", flashsale.<deployment>.orders.dlq.v1 with a deployment name)")
	c.ConsumerGroup, c.ccGroup = defaultConsumerGroup, trackedString{p: &c.ConsumerGroup}
	fs.Var(&c.ccGroup, "consumer-group", "Kafka consumer group of the order writers (default "+defaultConsumerGroup+", flashsale-<deployment>-order-writers with a deployment name)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", "", "host:port serving /debug/pprof, empty to switch off")
	fs.StringVar(&c.MySQLPassword, "mysql-password", "", "MySQL password, replacing the DSN's (or FLASHSALE_MYSQL_PASSWORD_FILE)")
	fs.StringVar(&c.MySQLTLSCAFile, "mysql-tls-ca-file", "", "PEM file of the CAs of MySQL's certificate: TLS verified against it (the DSN then sets no tls)")
	fs.StringVar(&c.MySQLTLSCertFile, "mysql-tls-cert-file", "", "PEM client certificate for MySQL, with -mysql-tls-key-file and -mysql-tls-ca-file")
	fs.StringVar(&c.MySQLTLSKeyFile, "mysql-tls-key-file", "", "PEM key of the MySQL client certificate")
	c.Kafka.RegisterFlags(fs)
	c.ServerChecks.RegisterFlags(fs)
	c.Redis.RegisterFlags(fs)
}

// Validate implements Registerer.
func (c *Common) Validate() error {
	if _, err := mysql.ParseDSN(c.MySQLDSN); err != nil {
		return fmt.Errorf("FLASHSALE_MYSQL_DSN: %v (expected user:pass@tcp(host:port)/db)", err)
	}
	if err := c.validateMySQLTLS(); err != nil {
		return err
	}
	if err := c.validateRedis(); err != nil {
		return err
	}
	if err := c.ServerChecks.Validate(); err != nil {
		return err
	}
	if err := c.Kafka.Validate(); err != nil {
		return err
	}
	if err := hostPorts(c.KafkaBrokers); err != nil {
		return fmt.Errorf("FLASHSALE_KAFKA_BROKERS: %v (expected host:port[,host:port...])", err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("FLASHSALE_LOG_LEVEL: %q (expected debug, info, warn or error)", c.LogLevel)
	}
	if c.LogBurst < 0 {
		return fmt.Errorf("FLASHSALE_LOG_BURST: %d (expected 0 or more lines per second)", c.LogBurst)
	}
	if c.StoreTimeout <= 0 {
		return fmt.Errorf("FLASHSALE_STORE_TIMEOUT: %v (expected a positive duration)", c.StoreTimeout)
	}
	if c.ShutdownTimeout <= 0 {
		return fmt.Errorf("FLASHSALE_SHUTDOWN_TIMEOUT: %v (expected a positive duration)", c.ShutdownTimeout)
	}
	if c.PprofAddr != "" {
		if err := hostPorts(c.PprofAddr); err != nil {
			return fmt.Errorf("FLASHSALE_PPROF_ADDR: %v (expected host:port or empty)", err)
		}
	}
	if err := c.applyDeployment(); err != nil {
		return err
	}
	for name, v := range map[string]string{"FLASHSALE_ORDERS_TOPIC": c.OrdersTopic, "FLASHSALE_DLQ_TOPIC": c.DLQTopic, "FLASHSALE_CONSUMER_GROUP": c.ConsumerGroup} {
		if !validKafkaName(v) {
			return fmt.Errorf("%s: %q (expected 1-249 characters of a-z A-Z 0-9 . _ -)", name, v)
		}
	}
	if c.PaymentWindow < time.Second {
		return fmt.Errorf("FLASHSALE_PAYMENT_WINDOW: %v (expected a duration of at least 1s)", c.PaymentWindow)
	}
	return nil
}

// Brokers returns KafkaBrokers as a slice.
func (c *Common) Brokers() []string { return split(c.KafkaBrokers) }

// RedisAddrs returns the Redis addresses, FLASHSALE_REDIS_URL's when it is
// set; see RedisConn for the mode.
func (c *Common) RedisAddrs() []string { return c.RedisConn().Addrs }

// DSN returns the MySQL DSN with the options flashsale relies on forced:
// parseTime, UTC and a session time zone of UTC so DATETIME(3) columns and
// NOW(3) agree, and multiStatements off.
func (c *Common) DSN() string {
	cfg, err := mysql.ParseDSN(c.MySQLDSN)
	if err != nil {
		return c.MySQLDSN // Validate has rejected it already.
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	if cfg.Timeout == 0 {
		cfg.Timeout = c.StoreTimeout
	}
	// A safety net under the callers' contexts: a black-holed server can
	// never hang a connection forever. Far above any single query.
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 60 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 60 * time.Second
	}
	cfg.InterpolateParams = true
	if c.MySQLPassword != "" {
		cfg.Passwd = c.MySQLPassword
	}
	if c.mysqlTLS() {
		if name, err := c.registerMySQLTLS(cfg.Addr); err == nil {
			cfg.TLSConfig = name
		} else {
			// Validate has read the files; one gone since is refused
			// by the driver as an unknown tls config, never plaintext.
			cfg.TLSConfig = "flashsale-unreadable-ca"
		}
	}
	return cfg.FormatDSN()
}

// RedactedDSN is the DSN as logs may show it: no password.
func (c *Common) RedactedDSN() string {
	cfg, err := mysql.ParseDSN(c.MySQLDSN)
	if err != nil {
		return "<unparsable DSN>"
	}
	if cfg.Passwd != "" || c.MySQLPassword != "" {
		cfg.Passwd = "redacted"
	}
	return cfg.FormatDSN()
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func hostPorts(s string) error {
	parts := split(s)
	if len(parts) == 0 {
		return fmt.Errorf("empty")
	}
	for _, p := range parts {
		if _, _, err := net.SplitHostPort(p); err != nil {
			return fmt.Errorf("%q: %v", p, err)
		}
	}
	return nil
}

func validKafkaName(s string) bool {
	if len(s) == 0 || len(s) > 249 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// applyDeployment checks the deployment's name and gives it to the Kafka
// names left at their defaults; a name set explicitly is kept as it is.
func (c *Common) applyDeployment() error {
	if !ValidDeployment(c.Deployment) {
		return fmt.Errorf("FLASHSALE_DEPLOYMENT: %q (expected empty, or 1-32 of a-z 0-9 -, not starting or ending with -)", c.Deployment)
	}
	if c.Deployment == "" {
		return nil
	}
	for _, n := range []struct {
		t   *trackedString
		def string
	}{
		{&c.ordersTopic, "flashsale." + c.Deployment + ".orders.v1"},
		{&c.dlqTopic, "flashsale." + c.Deployment + ".orders.dlq.v1"},
		{&c.ccGroup, "flashsale-" + c.Deployment + "-order-writers"},
	} {
		if !n.t.set && n.t.p != nil {
			*n.t.p = n.def
		}
	}
	return nil
}

// deploymentName is what FLASHSALE_DEPLOYMENT may be: short, lower case,
// safe inside a Redis key and a Kafka topic name ("" is the default).
var deploymentName = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?)?$`)

// ValidDeployment reports whether name may be FLASHSALE_DEPLOYMENT; pkg/stock
// keys a deployment's Redis names by the same rule.
func ValidDeployment(name string) bool { return deploymentName.MatchString(name) }
