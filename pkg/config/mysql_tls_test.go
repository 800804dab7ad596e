//go:build tls

package config_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestMySQLOverTLS: the user of `stack.sh env --tls` (REQUIRE SSL) logs in
// with FLASHSALE_MYSQL_TLS_CA_FILE and FLASHSALE_MYSQL_PASSWORD, and the
// session is encrypted.
func TestMySQLOverTLS(t *testing.T) {
	c := testenv.Common(t)
	if c.MySQLTLSCAFile == "" || c.MySQLPassword == "" {
		t.Fatal(`the tls tests need the stack's TLS settings: eval "$(deploy/local/stack.sh env --tls)"`)
	}
	db, err := sql.Open("mysql", c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.StoreTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(c.ExplainMySQL(err))
	}
	var name, cipher string
	if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil || cipher == "" {
		t.Fatalf("session not over TLS: cipher %q, %v", cipher, err)
	}
	c.MySQLPassword += "-wrong"
	if msg := openFails(t, c); msg[:len("FLASHSALE_MYSQL_PASSWORD: ")] != "FLASHSALE_MYSQL_PASSWORD: " {
		t.Fatalf("wrong password: %q", msg)
	}
}
