package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCA is a throw-away certificate authority of one test: its PEM file,
// and a server certificate for 127.0.0.1 and localhost it signed.
type TestCA struct {
	// CAFile is the CA certificate, PEM, in the test's temp dir.
	CAFile string
	// Server is a certificate for 127.0.0.1, ::1 and localhost.
	Server tls.Certificate
}

// NewTestCA generates a CA and a server certificate (ECDSA P-256, valid
// an hour) with crypto/x509, so TLS failure tests need no TLS server of
// the stack.
func NewTestCA(t testing.TB) TestCA {
	t.Helper()
	caKey := must(t, func() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) })
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flashsale test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER := must(t, func() ([]byte, error) {
		return x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	})
	caCert := must(t, func() (*x509.Certificate, error) { return x509.ParseCertificate(caDER) })
	srvKey := must(t, func() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) })
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER := must(t, func() ([]byte, error) {
		return x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	})
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return TestCA{CAFile: path, Server: tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}}
}

// TLSListener serves TLS with ca's server certificate on a loopback port
// until the test ends; every connection completes the handshake (or
// fails it) and is then held open, silent, until the client goes. It
// returns the address.
func (ca TestCA) TLSListener(t testing.TB) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ca.Server}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err != nil {
					return
				}
				_, _ = c.Read(make([]byte, 1)) // until the client hangs up
			}()
		}
	}()
	return ln.Addr().String()
}

func must[T any](t testing.TB, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
