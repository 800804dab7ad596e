package config_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
)

// openFails connects as start-up does (sql.Open and a ping) and returns
// ExplainMySQL's error, failing the test if there is none, it is not
// config.ErrRefused but a hang cut short, or not one line. The ping's
// context, ten times the store timeout, is a hang guard: a server that
// refuses the settings answers at once, and a ping that waited for the
// context instead fails with its error, not with the refusal.
func openFails(t *testing.T, c config.Common) string {
	t.Helper()
	db, err := sql.Open("mysql", c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*c.StoreTimeout)
	defer cancel()
	err = c.ExplainMySQL(db.PingContext(ctx))
	if err == nil {
		t.Fatal("ping succeeded")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ping hung until its %v hang guard: %v", 10*c.StoreTimeout, err)
	}
	if !errors.Is(err, config.ErrRefused) {
		t.Errorf("%v is not config.ErrRefused", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("not one line: %q", err)
	}
	return err.Error()
}

// stackMySQL is the plaintext stack's DSN (FLASHSALE_MYSQL_DSN or the default).
func stackMySQL(t *testing.T) map[string]string {
	t.Helper()
	testenv.MySQL(t) // it is up
	c := testenv.Common(t)
	return map[string]string{"FLASHSALE_MYSQL_DSN": c.MySQLDSN}
}

// TestMySQLWrongPassword: FLASHSALE_MYSQL_PASSWORD refused is one line
// naming it, the server and the user, never the password.
func TestMySQLWrongPassword(t *testing.T) {
	env := stackMySQL(t)
	env["FLASHSALE_MYSQL_PASSWORD"] = "not-the-password-" + testenv.Suffix()
	c := testenv.CommonFrom(t, env)
	msg := openFails(t, c)
	if !strings.HasPrefix(msg, "FLASHSALE_MYSQL_PASSWORD: mysql ") || !strings.Contains(msg, "refused the login of user") {
		t.Fatalf("err = %q", msg)
	}
	if strings.Contains(msg, env["FLASHSALE_MYSQL_PASSWORD"]) {
		t.Fatalf("the password leaked: %q", msg)
	}
}

// TestMySQLUntrustedCA: a CA that did not sign the server's certificate
// (or a server without TLS) is one line naming FLASHSALE_MYSQL_TLS_CA_FILE.
func TestMySQLUntrustedCA(t *testing.T) {
	env := stackMySQL(t)
	env["FLASHSALE_MYSQL_TLS_CA_FILE"] = testenv.NewTestCA(t).CAFile
	c := testenv.CommonFrom(t, env)
	if msg := openFails(t, c); !strings.HasPrefix(msg, "FLASHSALE_MYSQL_TLS_CA_FILE: mysql ") {
		t.Fatalf("err = %q", msg)
	}
}
