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

func TestIsTransient(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("store: x: %w", err) }
	if IsTransient(nil) {
		t.Error("nil is transient")
	}
	for _, err := range []error{
		errors.New("an unrecognised client-side failure"),
		&mysql.MySQLError{Number: 1213}, &mysql.MySQLError{Number: 1205}, &mysql.MySQLError{Number: 1317},
		driver.ErrBadConn, mysql.ErrInvalidConn, io.ErrUnexpectedEOF, context.DeadlineExceeded,
		syscall.ECONNREFUSED, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED},
	} {
		if !IsTransient(wrap(err)) {
			t.Errorf("%v: not transient, want transient", err)
		}
	}
	for _, err := range []error{
		context.Canceled, &mysql.MySQLError{Number: 1062}, &mysql.MySQLError{Number: 1064}, ErrNotFound,
	} {
		if IsTransient(wrap(err)) {
			t.Errorf("%v: transient, want an answer", err)
		}
	}
}
