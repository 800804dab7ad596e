package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// writeCA writes a self-signed CA certificate (PEM) and its key to dir and
// returns the certificate's path.
func writeCA(t *testing.T, dir string) (caFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	write(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	write(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	return caFile, keyFile
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func base() map[string]string { return map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef"} }

func with(kv ...string) map[string]string {
	m := base()
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestSecretFromFile: FLASHSALE_X_FILE names a file whose contents (one
// trailing newline trimmed) are FLASHSALE_X.
func TestSecretFromFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pw")
	write(t, p, "s3cret\n")
	c, _, err := parse(t, with("FLASHSALE_KAFKA_SASL_MECHANISM", "scram-sha-512", "FLASHSALE_KAFKA_SASL_USERNAME", "flashsale",
		"FLASHSALE_KAFKA_SASL_PASSWORD_FILE", p, "FLASHSALE_JWT_SECRET_FILE", p))
	if err == nil || !strings.Contains(err.Error(), "FLASHSALE_JWT_SECRET") {
		t.Fatalf("FLASHSALE_JWT_SECRET and _FILE both set: err = %v, want it to name both", err)
	}
	if !strings.Contains(err.Error(), "FLASHSALE_JWT_SECRET_FILE") {
		t.Fatalf("err = %v, want it to name FLASHSALE_JWT_SECRET_FILE too", err)
	}
	m := with("FLASHSALE_KAFKA_SASL_MECHANISM", "scram-sha-512", "FLASHSALE_KAFKA_SASL_USERNAME", "flashsale",
		"FLASHSALE_KAFKA_SASL_PASSWORD_FILE", p)
	delete(m, "FLASHSALE_JWT_SECRET")
	jp := filepath.Join(dir, "jwt")
	write(t, jp, "0123456789abcdef0123\r\n")
	m["FLASHSALE_JWT_SECRET_FILE"] = jp
	c, in, err := parse(t, m)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.SASLPassword != "s3cret" || in.JWTSecret != "0123456789abcdef0123" || c.Kafka.SASLMechanism != "SCRAM-SHA-512" {
		t.Fatalf("password %q secret %q mechanism %q", c.Kafka.SASLPassword, in.JWTSecret, c.Kafka.SASLMechanism)
	}
	_, _, err = parse(t, with("FLASHSALE_MYSQL_PASSWORD_FILE", filepath.Join(dir, "missing")))
	if err == nil || !strings.Contains(err.Error(), "FLASHSALE_MYSQL_PASSWORD_FILE") || !strings.Contains(err.Error(), filepath.Join(dir, "missing")) {
		t.Fatalf("unreadable file: err = %v, want it to name the setting and the path", err)
	}
	if strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("error is not one line: %q", err)
	}
	// A bad value read from a file is not echoed: it may be a secret.
	write(t, p, "soon\n")
	_, _, err = parse(t, with("FLASHSALE_STORE_TIMEOUT_FILE", p))
	if err == nil || !strings.Contains(err.Error(), "FLASHSALE_STORE_TIMEOUT") || strings.Contains(err.Error(), "soon") {
		t.Fatalf("bad value from a file: err = %v", err)
	}
}

// TestNoFileVariantCollides: no setting's _FILE variant is itself a setting.
func TestNoFileVariantCollides(t *testing.T) {
	names := map[string]bool{}
	for _, n := range Names(&Common{}, &Ingress{}, &Consumer{}, &Reaper{}, &Setup{}) {
		names[n] = true
	}
	for n := range names {
		if names[n+"_FILE"] {
			t.Errorf("%s_FILE is a setting of its own, so %s cannot be read from a file", n, n)
		}
	}
}

func TestKafkaSecuritySettings(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writeCA(t, dir)
	c, _, err := parse(t, base())
	if err != nil || c.Kafka.TLS || c.Kafka.SASLMechanism != "" {
		t.Fatalf("defaults: %+v %v", c.Kafka, err)
	}
	if tc, err := c.Kafka.TLSConfig(); tc != nil || err != nil {
		t.Fatalf("TLS off by default: %v %v", tc, err)
	}
	c, _, err = parse(t, with("FLASHSALE_KAFKA_TLS_CA_FILE", ca))
	if err != nil {
		t.Fatal(err)
	}
	if tc, err := c.Kafka.TLSConfig(); err != nil || tc == nil || tc.RootCAs == nil {
		t.Fatalf("a CA implies TLS: %v %v", tc, err)
	}
	c, _, err = parse(t, with("FLASHSALE_KAFKA_TLS_CA_FILE", ca, "FLASHSALE_KAFKA_TLS_CERT_FILE", ca, "FLASHSALE_KAFKA_TLS_KEY_FILE", caKey))
	if tc, _ := c.Kafka.TLSConfig(); err != nil || tc == nil || len(tc.Certificates) != 1 {
		t.Fatalf("client certificate: %v", err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	write(t, notPEM, "hello")
	for env, want := range map[string][]string{
		"FLASHSALE_KAFKA_TLS=maybe":                           {"FLASHSALE_KAFKA_TLS"},
		"FLASHSALE_KAFKA_TLS_CA_FILE=" + dir + "/nope.pem":    {"FLASHSALE_KAFKA_TLS_CA_FILE", dir + "/nope.pem"},
		"FLASHSALE_KAFKA_TLS_CA_FILE=" + notPEM:               {"FLASHSALE_KAFKA_TLS_CA_FILE", notPEM},
		"FLASHSALE_KAFKA_TLS_CERT_FILE=" + ca:                 {"FLASHSALE_KAFKA_TLS_KEY_FILE"},
		"FLASHSALE_KAFKA_TLS_KEY_FILE=" + caKey:               {"FLASHSALE_KAFKA_TLS_CERT_FILE"},
		"FLASHSALE_KAFKA_SASL_MECHANISM=GSSAPI":               {"FLASHSALE_KAFKA_SASL_MECHANISM"},
		"FLASHSALE_KAFKA_SASL_MECHANISM=PLAIN":                {"FLASHSALE_KAFKA_SASL_USERNAME"},
		"FLASHSALE_KAFKA_SASL_USERNAME=flashsale":             {"FLASHSALE_KAFKA_SASL_MECHANISM"},
		"FLASHSALE_KAFKA_SASL_PASSWORD=hunter2-hunter2":       {"FLASHSALE_KAFKA_SASL_MECHANISM"},
		"FLASHSALE_REDIS_MODE=ring":                           {"FLASHSALE_REDIS_MODE"},
		"FLASHSALE_REDIS_MODE=sentinel":                       {"FLASHSALE_REDIS_SENTINEL_MASTER"},
		"FLASHSALE_REDIS_URL=http://x:1":                      {"FLASHSALE_REDIS_URL"},
		"FLASHSALE_REDIS_URL=redis://u:hunter2-hunter2@x:1/a": {"FLASHSALE_REDIS_URL"},
		"FLASHSALE_REDIS_TLS_CA_FILE=" + notPEM:               {"FLASHSALE_REDIS_TLS_CA_FILE", notPEM},
		"FLASHSALE_REDIS_TLS_CERT_FILE=" + ca:                 {"FLASHSALE_REDIS_TLS_KEY_FILE"},
		"FLASHSALE_MYSQL_TLS_CA_FILE=" + dir + "/nope.pem":    {"FLASHSALE_MYSQL_TLS_CA_FILE", dir + "/nope.pem"},
		"FLASHSALE_MYSQL_TLS_CERT_FILE=" + ca:                 {"FLASHSALE_MYSQL_TLS_KEY_FILE"},
	} {
		k, v, _ := strings.Cut(env, "=")
		_, _, err := parse(t, with(k, v))
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to name %s", env, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: a password leaked into the error: %v", env, err)
		}
	}
}

func TestRedisSettings(t *testing.T) {
	c, _, err := parse(t, base())
	if err != nil {
		t.Fatal(err)
	}
	if r := c.RedisConn(); r.Mode != "single" || len(r.Addrs) != 1 || r.TLS != nil {
		t.Fatalf("default: %+v", r)
	}
	c, _, _ = parse(t, with("FLASHSALE_REDIS_ADDR", "a:1,b:2"))
	if r := c.RedisConn(); r.Mode != "cluster" {
		t.Fatalf("auto with two seeds: %+v", r)
	}
	c, _, err = parse(t, with("FLASHSALE_REDIS_ADDR", "cfg.example:6379", "FLASHSALE_REDIS_MODE", "cluster"))
	if r := c.RedisConn(); err != nil || r.Mode != "cluster" || len(r.Addrs) != 1 {
		t.Fatalf("cluster behind one endpoint: %+v %v", r, err)
	}
	c, _, err = parse(t, with("FLASHSALE_REDIS_URL", "rediss://flashsale:p%40ss@cache.example:6380/0?addr=cache2.example:6380"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.RedisConn()
	if r.Username != "flashsale" || r.Password != "p@ss" || r.DB != 0 || strings.Join(r.Addrs, ",") != "cache.example:6380,cache2.example:6380" ||
		r.TLS == nil || r.TLS.ServerName != "cache.example" || r.Mode != "cluster" {
		t.Fatalf("URL: %+v", r)
	}
	if strings.Join(c.RedisAddrs(), ",") != "cache.example:6380,cache2.example:6380" {
		t.Fatalf("RedisAddrs from the URL: %v", c.RedisAddrs())
	}
	c, _, err = parse(t, with("FLASHSALE_REDIS_URL", "redis://cache.example:6379/3"))
	if r := c.RedisConn(); err != nil || r.DB != 3 || r.Mode != "single" {
		t.Fatalf("URL with a database: %+v %v", r, err)
	}
	c, _, err = parse(t, with("FLASHSALE_REDIS_URL", "redis://cache.example:6379", "FLASHSALE_REDIS_PASSWORD", "pw", "FLASHSALE_REDIS_USERNAME", "u"))
	if r := c.RedisConn(); err != nil || r.Password != "pw" || r.Username != "u" || r.TLS != nil || r.Mode != "single" {
		t.Fatalf("URL + password setting: %+v %v", r, err)
	}
	_, _, err = parse(t, with("FLASHSALE_REDIS_URL", "redis://:hunter2-hunter2@a:1", "FLASHSALE_REDIS_ADDR", "b:2"))
	if err == nil || !strings.Contains(err.Error(), "FLASHSALE_REDIS_URL") || !strings.Contains(err.Error(), "FLASHSALE_REDIS_ADDR") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("URL and ADDR both set: %v", err)
	}
	c, _, err = parse(t, with("FLASHSALE_REDIS_ADDR", "127.0.0.1:26379", "FLASHSALE_REDIS_MODE", "sentinel", "FLASHSALE_REDIS_SENTINEL_MASTER", "flashsale",
		"FLASHSALE_REDIS_SENTINEL_PASSWORD", "sp", "FLASHSALE_REDIS_TLS", "true"))
	if r := c.RedisConn(); err != nil || r.Mode != "sentinel" || r.SentinelMaster != "flashsale" || r.SentinelPassword != "sp" || r.TLS == nil {
		t.Fatalf("sentinel: %+v %v", r, err)
	}
	_, _, err = parse(t, with("FLASHSALE_REDIS_ADDR", "a:1,b:2", "FLASHSALE_REDIS_MODE", "single"))
	if err == nil || !strings.Contains(err.Error(), "FLASHSALE_REDIS_MODE") {
		t.Fatalf("single with two addresses: %v", err)
	}
}

func TestMySQLSecurity(t *testing.T) {
	dir := t.TempDir()
	ca, _ := writeCA(t, dir)
	c, _, err := parse(t, with("FLASHSALE_MYSQL_DSN", "app@tcp(db.example:3306)/flashsale", "FLASHSALE_MYSQL_PASSWORD", "hunter2-hunter2",
		"FLASHSALE_MYSQL_TLS_CA_FILE", ca))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mysql.ParseDSN(c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Passwd != "hunter2-hunter2" || cfg.TLS == nil || cfg.TLS.ServerName != "db.example" || cfg.TLS.RootCAs == nil {
		t.Fatalf("DSN %+v", cfg)
	}
	// A DSN's own tls= keeps working, and a CA file beside it is refused.
	c, _, err = parse(t, with("FLASHSALE_MYSQL_DSN", "app:pw@tcp(db.example:3306)/flashsale?tls=skip-verify"))
	if cfg, _ := mysql.ParseDSN(c.DSN()); err != nil || cfg.TLSConfig != "skip-verify" {
		t.Fatalf("tls=skip-verify: %v", err)
	}
	_, _, err = parse(t, with("FLASHSALE_MYSQL_DSN", "app:hunter2-hunter2@tcp(db.example:3306)/flashsale?tls=true", "FLASHSALE_MYSQL_TLS_CA_FILE", ca))
	if err == nil || !strings.Contains(err.Error(), "FLASHSALE_MYSQL_TLS_CA_FILE") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("DSN tls= and a CA file: %v", err)
	}
	if s := c.RedactedDSN(); strings.Contains(s, "pw@") {
		t.Fatalf("Redacted DSN shows the password: %s", s)
	}
}
