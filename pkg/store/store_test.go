package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// serverErr is a server error as the driver hands it over: number, SQLSTATE
// and the server's text (MySQL 8.4 and MariaDB 10.11 wording).
func serverErr(n uint16, state, msg string) *mysql.MySQLError {
	e := &mysql.MySQLError{Number: n, Message: msg}
	copy(e.SQLState[:], state)
	return e
}

// TestIsTransient classifies by error number: only answers about the data or
// the statement itself are permanent; every failover, overload, kill and
// unknown server error is worth waiting out, because calling it permanent
// dead-letters good orders.
func TestIsTransient(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("store: x: %w", err) }
	cases := []struct {
		name      string
		err       error
		transient bool
	}{
		// Failover and read-only windows.
		{"1290 read-only (MySQL, MariaDB)", serverErr(1290, "HY000", "The MariaDB server is running with the --read-only option so it cannot execute this statement"), true},
		{"1792 read-only transaction", serverErr(1792, "25006", "Cannot execute statement in a READ ONLY transaction"), true},
		{"1836 MariaDB read-only mode", serverErr(1836, "HY000", "Running in read-only mode"), true},
		{"1927 connection killed", serverErr(1927, "70100", "Connection was killed"), true},
		{"1053 server shutdown", serverErr(1053, "08S01", "Server shutdown in progress"), true},
		{"4031 disconnected for inactivity", serverErr(4031, "HY000", "The client was disconnected by the server because of inactivity."), true},
		// Overload and contention.
		{"1203 max_user_connections", serverErr(1203, "42000", "User flashsale already has more than 'max_user_connections' active connections"), true},
		{"1040 too many connections", serverErr(1040, "08004", "Too many connections"), true},
		{"1205 lock wait timeout", serverErr(1205, "HY000", "Lock wait timeout exceeded; try restarting transaction"), true},
		{"1213 deadlock", serverErr(1213, "40001", "Deadlock found when trying to get lock; try restarting transaction"), true},
		{"1317 query interrupted", serverErr(1317, "70100", "Query execution was interrupted"), true},
		{"3024 max_execution_time", serverErr(3024, "HY000", "Query execution was interrupted, maximum statement execution time exceeded"), true},
		{"1969 max_statement_time", serverErr(1969, "70100", "Query execution was interrupted (max_statement_time exceeded)"), true},
		{"1114 table full", serverErr(1114, "HY000", "The table 'orders' is full"), true},
		// Grants and accounts are an operator's fix: wait, do not reject.
		{"1045 access denied", serverErr(1045, "28000", "Access denied for user 'flashsale'@'127.0.0.1' (using password: YES)"), true},
		{"1142 command denied", serverErr(1142, "42000", "INSERT command denied to user 'flashsale'@'127.0.0.1' for table 'orders'"), true},
		{"an error number nobody listed", serverErr(1105, "HY000", "Unknown error"), true},
		// Not an answer from the server at all: an outage.
		{"unrecognised client-side error", errors.New("an unrecognised client-side failure"), true},
		{"bad conn", driver.ErrBadConn, true},
		{"invalid conn", mysql.ErrInvalidConn, true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"deadline", context.DeadlineExceeded, true},
		{"refused", syscall.ECONNREFUSED, true},
		{"dial refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},

		// Permanent: the data does not fit...
		{"1406 data too long", serverErr(1406, "22001", "Data too long for column 'request_id' at row 1"), false},
		{"1264 out of range", serverErr(1264, "22003", "Out of range value for column 'qty' at row 1"), false},
		{"1690 value out of range", serverErr(1690, "22003", "BIGINT UNSIGNED value is out of range in '(`stock` - 5)'"), false},
		{"1366 incorrect integer", serverErr(1366, "22007", "Incorrect integer value: 'x' for column 'qty' at row 1"), false},
		{"1292 incorrect datetime", serverErr(1292, "22007", "Incorrect datetime value: 'x' for column 'expires_at' at row 1"), false},
		{"1265 data truncated", serverErr(1265, "01000", "Data truncated for column 'outcome' at row 1"), false},
		{"1048 null", serverErr(1048, "23000", "Column 'user_id' cannot be null"), false},
		{"3819 CHECK (MySQL)", serverErr(3819, "HY000", "Check constraint 'orders_qty_pos' is violated."), false},
		{"4025 CHECK (MariaDB)", serverErr(4025, "23000", "CONSTRAINT `orders_qty_pos` failed for `flashsale`.`orders`"), false},
		{"1062 duplicate", serverErr(1062, "23000", "Duplicate entry 'r-1' for key 'PRIMARY'"), false},
		// ...or the statement is wrong: a code bug.
		{"1064 syntax", serverErr(1064, "42000", "You have an error in your SQL syntax"), false},
		{"1054 unknown column", serverErr(1054, "42S22", "Unknown column 'qtty' in 'field list'"), false},
		{"1146 no such table", serverErr(1146, "42S02", "Table 'flashsale.order' doesn't exist"), false},
		{"1136 column count", serverErr(1136, "21S01", "Column count doesn't match value count at row 1"), false},
		{"1390 too many placeholders", serverErr(1390, "HY000", "Prepared statement contains too many placeholders"), false},
		{"packet too large", mysql.ErrPktTooLarge, false},
		// Not a failure to wait out either.
		{"caller gone", context.Canceled, false},
		{"not found", ErrNotFound, false},
	}
	if IsTransient(nil) || IsPermanent(nil) {
		t.Error("nil is transient or permanent")
	}
	for _, c := range cases {
		if got := IsTransient(wrap(c.err)); got != c.transient {
			t.Errorf("%s (%v): IsTransient = %v, want %v", c.name, c.err, got, c.transient)
		}
	}
}

// IsPermanent is exactly the short list: neither a transient error nor the
// caller leaving is permanent.
func TestIsPermanent(t *testing.T) {
	for _, err := range []error{serverErr(1406, "22001", "Data too long"), serverErr(4025, "23000", "CONSTRAINT failed"), mysql.ErrPktTooLarge} {
		if !IsPermanent(fmt.Errorf("x: %w", err)) {
			t.Errorf("%v: not permanent", err)
		}
	}
	for _, err := range []error{serverErr(1290, "HY000", "read-only"), context.Canceled, ErrNotFound, errors.New("eof")} {
		if IsPermanent(fmt.Errorf("x: %w", err)) {
			t.Errorf("%v: permanent", err)
		}
	}
}
