package config_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
)

// openFails connects as start-up does (sql.Open and a ping within the
// store timeout) and returns ExplainMySQL's error, failing the test if
// there is none, it is not config.ErrRefused, not one line, or late.
func openFails(t *testing.T, c config.Common) string {
	t.Helper()
	db, err := sql.Open("mysql", c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.StoreTimeout)
	defer cancel()
	start := time.Now()
	err = c.ExplainMySQL(db.PingContext(ctx))
	if err == nil {
		t.Fatal("ping succeeded")
	}
	if d := time.Since(start); d > c.StoreTimeout+time.Second {
		t.Fatalf("ping took %v", d)
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
