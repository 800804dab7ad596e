package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"

	"github.com/go-sql-driver/mysql"
)

// validateMySQLTLS reads the MySQL TLS files, so a missing one stops
// start-up naming its setting, and refuses a CA file beside a DSN that
// picks its own tls= (which of the two would win is a guess).
func (c *Common) validateMySQLTLS() error {
	if !c.mysqlTLS() {
		return nil
	}
	cfg, err := mysql.ParseDSN(c.MySQLDSN)
	if err != nil {
		return nil // refused by the caller
	}
	if cfg.TLSConfig != "" && cfg.TLSConfig != "false" {
		return fmt.Errorf("FLASHSALE_MYSQL_TLS_CA_FILE: set, but FLASHSALE_MYSQL_DSN has tls=%s (expected one of them)", cfg.TLSConfig)
	}
	_, err = c.registerMySQLTLS(cfg.Addr)
	return err
}

// mysqlTLS reports whether the MySQL TLS settings are in use (a client
// certificate without a CA file verifies against the system's roots).
func (c *Common) mysqlTLS() bool {
	return c.MySQLTLSCAFile != "" || c.MySQLTLSCertFile != "" || c.MySQLTLSKeyFile != ""
}

// registerMySQLTLS registers the TLS config of the MySQL settings with the
// driver (mysql.RegisterTLSConfig; a DSN can only name a config) and
// returns its name, which depends on the files and the host, so two
// configurations in one process (tests) do not overwrite each other.
func (c *Common) registerMySQLTLS(addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cfg, err := tlsFiles{prefix: "FLASHSALE_MYSQL_TLS", ca: c.MySQLTLSCAFile, cert: c.MySQLTLSCertFile, key: c.MySQLTLSKeyFile, serverName: host}.load()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(c.MySQLTLSCAFile + "\x00" + c.MySQLTLSCertFile + "\x00" + c.MySQLTLSKeyFile + "\x00" + host))
	name := "flashsale-" + hex.EncodeToString(sum[:8])
	if err := mysql.RegisterTLSConfig(name, cfg); err != nil {
		return "", fmt.Errorf("FLASHSALE_MYSQL_TLS_CA_FILE: %v", err)
	}
	return name, nil
}
