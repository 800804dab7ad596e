package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Querier is what both *sql.DB and *sql.Tx offer.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Pool returns a pool on dsn without connecting: the deployables make it
// first and wait for MySQL afterwards (pkg/startup), so a MySQL that is
// down at start-up is waited for, not a reason to exit.
func Pool(dsn string, maxOpen int) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	db.SetConnMaxLifetime(5 * time.Minute)
	return db, nil
}

// Open opens a pool on dsn and checks it answers within timeout.
func Open(ctx context.Context, dsn string, maxOpen int, timeout time.Duration) (*sql.DB, error) {
	db, err := Pool(dsn, maxOpen)
	if err != nil {
		return nil, err
	}
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
	erDupEntry      = 1062
	erDeadlock      = 1213
	erCheckViolated = 3819 // MySQL 8
	erMariaCheck    = 4025 // MariaDB
)

// permanentErrors are the server's answers that retrying the same statement
// can never change: the data does not fit its column or constraint, or the
// statement itself is wrong (a code bug, or code ahead of its migration).
// The list is short on purpose; every other server error (read-only during a
// failover, a killed connection, too many connections, a lock timeout, an
// error number nobody listed) is transient. See IsTransient.
var permanentErrors = []uint16{
	1048, // ER_BAD_NULL_ERROR: column cannot be null
	1062, // ER_DUP_ENTRY: writers turn their expected races into a retry before classifying
	1264, // ER_WARN_DATA_OUT_OF_RANGE: out of range value for column
	1265, // WARN_DATA_TRUNCATED: e.g. a value outside an ENUM
	1292, // ER_TRUNCATED_WRONG_VALUE: incorrect datetime or number
	1366, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD: incorrect integer value
	1406, // ER_DATA_TOO_LONG
	1690, // ER_DATA_OUT_OF_RANGE: BIGINT value out of range in an expression
	erCheckViolated,
	erMariaCheck,
	1054, // ER_BAD_FIELD_ERROR: unknown column
	1064, // ER_PARSE_ERROR: SQL syntax
	1136, // ER_WRONG_VALUE_COUNT_ON_ROW: column count does not match value count
	1146, // ER_NO_SUCH_TABLE
	1149, // ER_SYNTAX_ERROR
	1390, // ER_PS_MANY_PARAM: too many placeholders (a batch too big for one statement)
}

// IsDeadlock reports InnoDB's deadlock abort: the whole transaction was
// rolled back as the victim, and running it again is the cure InnoDB's
// manual prescribes.
func IsDeadlock(err error) bool { return mysqlErr(err, erDeadlock) }

// deadlockAttempts bounds RunInTxDeadlockRetry's tries of one transaction:
// of n transactions deadlocked on one gap, one commits per round, so 16
// creates at once need up to 16 rounds (TestConcurrentCreates).
const deadlockAttempts = 20

// RunInTxDeadlockRetry is RunInTx, run again (up to 20 tries in all, after
// a random pause of up to 10 ms × the try) while InnoDB aborts it as a deadlock
// victim. For transactions that take their locks in an order they cannot
// fix: an admin PUT of a new item locks the id's gap (SELECT … FOR UPDATE of
// a row that does not exist), which other creates in the same gap share,
// and their inserts then deadlock. fn must be safe to run again: its effects
// outside the transaction repeated whole.
func RunInTxDeadlockRetry(ctx context.Context, db *sql.DB, iso sql.IsolationLevel, fn func(tx *sql.Tx) error) error {
	for i := 1; ; i++ {
		err := RunInTx(ctx, db, iso, fn)
		if !IsDeadlock(err) || i == deadlockAttempts {
			return err
		}
		pause := time.Duration(rand.Int64N(int64(i) * int64(10*time.Millisecond)))
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(pause):
		}
	}
}

// IsDuplicate reports a unique-key violation.
func IsDuplicate(err error) bool { return mysqlErr(err, erDupEntry) }

// IsCheckViolation reports a CHECK constraint violation (e.g. stock < 0).
func IsCheckViolation(err error) bool { return mysqlErr(err, erCheckViolated, erMariaCheck) }

// IsPermanent reports an error that retrying the same statement cannot cure:
// one of permanentErrors, or a statement too large for the connection's
// packet limit (the driver refuses it before sending; a smaller batch fits).
func IsPermanent(err error) bool {
	return mysqlErr(err, permanentErrors...) || errors.Is(err, mysql.ErrPktTooLarge)
}

// IsTransient reports an error worth retrying the whole transaction for:
// everything except the short list of permanent answers (IsPermanent), the
// caller leaving (context.Canceled) and ErrNotFound.
//
// It is deliberately broad. A server that is read-only while a primary is
// switched (1290, 1792, 1836), a connection killed (1927) or refused for its
// count (1040, 1203), a lock timeout, an error number not listed anywhere,
// and anything that is not an answer from the server at all (a lost, refused
// or timed-out connection) are outages: retrying stalls a partition (lag
// alerts fire, nothing is lost), while calling them permanent would send
// good orders to the dead-letter queue.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrNotFound) {
		return false
	}
	return !IsPermanent(err)
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
