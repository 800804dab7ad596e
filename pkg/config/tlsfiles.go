package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// tlsFiles are the PEM files of one client's TLS settings; prefix is the
// settings' common name, FLASHSALE_KAFKA_TLS for FLASHSALE_KAFKA_TLS_CA_FILE.
type tlsFiles struct {
	prefix        string
	ca, cert, key string
	serverName    string
}

// load builds the tls.Config: the CA file (none = the system roots), the
// client certificate when both its files are set, TLS 1.2 at least. Every
// error is one line naming the setting and the path.
func (f tlsFiles) load() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if f.ca != "" {
		b, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("%s_CA_FILE: %v", f.prefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s_CA_FILE: %s holds no PEM certificate", f.prefix, f.ca)
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.cert != "" && f.key == "":
		return nil, fmt.Errorf("%s_KEY_FILE: empty, but %s_CERT_FILE is set (a client certificate needs both)", f.prefix, f.prefix)
	case f.cert == "" && f.key != "":
		return nil, fmt.Errorf("%s_CERT_FILE: empty, but %s_KEY_FILE is set (a client certificate needs both)", f.prefix, f.prefix)
	case f.cert != "":
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("%s_CERT_FILE: %s with key %s: %v", f.prefix, f.cert, f.key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
