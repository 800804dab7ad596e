// Package store is flashsale's MySQL access: one file per table family
// (items, request outcomes, orders, stock restores), a transaction helper and
// the error classification every writer shares.
//
// SQL is kept to what both MySQL 8 and MariaDB 10.11 accept.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Querier is what both *sql.DB and *sql.Tx offer.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Open opens a pool on dsn and checks it answers within timeout.
func Open(ctx context.Context, dsn string, maxOpen int, timeout time.Duration) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	db.SetConnMaxLifetime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: ping: %w", err)
	}
	return db, nil
}

// RunInTx runs fn in a transaction at the given isolation level. It commits
// when fn returns nil and returns the commit error (never swallowed); on an
// error of fn it rolls back and joins the rollback error.
func RunInTx(ctx context.Context, db *sql.DB, iso sql.IsolationLevel, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("store: rollback: %w", rbErr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// MySQL error numbers flashsale reacts to.
const (
	erDupEntry        = 1062
	erLockWaitTimeout = 1205
	erLockDeadlock    = 1213
	erQueryInterrupt  = 1317
	erConCount        = 1040
	erServerShutdown  = 1053
	erCheckViolated   = 3819 // MySQL 8
	erMariaCheck      = 4025 // MariaDB
)

// IsDuplicate reports a unique-key violation.
func IsDuplicate(err error) bool { return mysqlErr(err, erDupEntry) }

// IsCheckViolation reports a CHECK constraint violation (e.g. stock < 0).
func IsCheckViolation(err error) bool { return mysqlErr(err, erCheckViolated, erMariaCheck) }

// IsTransient reports an error worth retrying the whole transaction for:
// deadlock, lock wait timeout, an interrupted or killed query, too many
// connections, a server shutting down, and anything that is not an answer
// from the server at all (a lost, refused or timed-out connection).
//
// The last case is deliberately broad: an unrecognised client-side error is
// treated as an outage, because retrying stalls a partition (lag alerts fire,
// nothing is lost) while calling it permanent would send good orders to the
// dead-letter queue. A SQL error from the server is an answer and is not
// retried.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if mysqlErr(err, erLockDeadlock, erLockWaitTimeout, erQueryInterrupt, erConCount, erServerShutdown) {
		return true
	}
	var me *mysql.MySQLError
	return !errors.As(err, &me) && !errors.Is(err, ErrNotFound)
}

func mysqlErr(err error, numbers ...uint16) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	for _, n := range numbers {
		if me.Number == n {
			return true
		}
	}
	return false
}
