package config

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

// ErrRefused marks a connection failure that settings caused and only
// settings can fix (a refused login, an untrusted certificate, TLS spoken
// to a plaintext port): start-up stops on it at once instead of retrying
// or running unready. Its message is one line naming the setting and the
// server (errors.Is).
var ErrRefused = errors.New("the server refused the connection settings")

// Refused is an ErrRefused error: "setting: " and the formatted message,
// which names the server.
func Refused(setting, format string, args ...any) error {
	return &refused{msg: setting + ": " + fmt.Sprintf(format, args...)}
}

type refused struct{ msg string }

func (r *refused) Error() string        { return r.msg }
func (r *refused) Is(target error) bool { return target == ErrRefused }

// TLSCause explains a TLS failure for the settings under prefix
// (FLASHSALE_REDIS_TLS…): the setting and the detail, or ok false when
// err is no TLS failure. tlsOn says whether the client spoke TLS.
func TLSCause(prefix string, tlsOn bool, err error) (setting, detail string, ok bool) {
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		verify    *tls.CertificateVerificationError
		header    tls.RecordHeaderError
	)
	eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
	switch {
	case errors.As(err, &unknownCA):
		return prefix + "_CA_FILE", unknownCA.Error(), true
	case errors.As(err, &invalid):
		return prefix + "_CA_FILE", invalid.Error(), true
	case errors.As(err, &hostname):
		return prefix + "_CA_FILE", hostname.Error() + " (the address is not a name the certificate holds)", true
	case errors.As(err, &verify):
		return prefix + "_CA_FILE", verify.Err.Error(), true
	case errors.As(err, &header):
		return prefix, "does not speak TLS (" + err.Error() + ")", true
	case tlsOn && eof:
		return prefix, "closed the connection during the TLS handshake (a plaintext port?)", true
	case !tlsOn && eof:
		return prefix, "closed the connection unanswered (a TLS port? " + prefix + " is off)", true
	}
	return "", "", false
}

// ExplainMySQL names the setting behind a MySQL connection failure (as
// store.Open returns it): a refused password, an untrusted certificate, a
// server without TLS where TLS is asked for. Other errors come back as
// they are. The DSN and the password are never shown.
func (c *Common) ExplainMySQL(err error) error {
	if err == nil {
		return nil
	}
	cfg, perr := mysql.ParseDSN(c.DSN())
	server := "mysql"
	tlsOn := false
	if perr == nil {
		server = "mysql " + cfg.Addr
		tlsOn = cfg.TLSConfig != "" && cfg.TLSConfig != "false"
	}
	caSetting := "FLASHSALE_MYSQL_TLS_CA_FILE"
	if !c.mysqlTLS() {
		caSetting = "FLASHSALE_MYSQL_DSN" // its own tls=
	}
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && (me.Number == 1045 || me.Number == 1698):
		setting := "FLASHSALE_MYSQL_PASSWORD"
		if c.MySQLPassword == "" {
			setting = "FLASHSALE_MYSQL_DSN"
		}
		return Refused(setting, "%s refused the login of user %s (%d %s)", server, cfg.User, me.Number, redactMsg(me.Message, cfg.Passwd))
	case errors.As(err, &me) && me.Number == 3159:
		return Refused(caSetting, "%s: user %s must connect over TLS (set FLASHSALE_MYSQL_TLS_CA_FILE): %s", server, cfg.User, me.Message)
	case errors.Is(err, mysql.ErrNoTLS):
		return Refused(caSetting, "%s offers no TLS, which the settings ask for", server)
	}
	if setting, detail, ok := TLSCause(strings.TrimSuffix(caSetting, "_CA_FILE"), tlsOn, err); ok && tlsOn {
		if !c.mysqlTLS() {
			setting = "FLASHSALE_MYSQL_DSN"
		}
		return Refused(setting, "%s: %s", server, detail)
	}
	return err
}

func redactMsg(msg, secret string) string {
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, "<redacted>")
}

// CheckMySQL pings db within the store timeout as a deployable's start-up
// runs it: only an error the settings caused (ErrRefused, from
// ExplainMySQL) is returned, for start-up to stop on; a MySQL that is
// merely unreachable is left to the waiting and readiness that follow.
func (c *Common) CheckMySQL(ctx context.Context, db *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, c.StoreTimeout)
	defer cancel()
	if err := c.ExplainMySQL(db.PingContext(ctx)); errors.Is(err, ErrRefused) {
		return err
	}
	return nil
}
