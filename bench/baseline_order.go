package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// BASELINES. Nothing in this file is part of flashsale: these are designs
// flashsale is measured against (baseline (c) is baseline_optimistic.go), written the way tutorials write
// them, correct but synchronous, so the comparison is honest.

// verdict is a baseline's answer to one order attempt.
type verdict struct {
	Code      int
	Error     string // API error code for non-202
	RequestID string
}

// Orderer is one baseline's synchronous order path.
type Orderer interface {
	Order(ctx context.Context, itemID, userID int64, qty int, idemKey string) (verdict, error)
}

// ForUpdateOrderer is baseline (a): each request is one MySQL transaction
// that locks the item row with SELECT ... FOR UPDATE, checks the buyer and
// the stock, decrements and inserts the order. Every request for the item,
// sold out or not, queues on that one row lock.
type ForUpdateOrderer struct{ DB *sql.DB }

// Order implements Orderer.
func (o ForUpdateOrderer) Order(ctx context.Context, itemID, userID int64, qty int, idemKey string) (verdict, error) {
	return orderInTx(ctx, o.DB, "SELECT stock FROM baseline_items WHERE id = ? FOR UPDATE", itemID, userID, qty, idemKey)
}

// RedisLockOrderer is baseline (b): the "distributed lock" tutorial. A Redis
// SET NX PX lock per item serialises check-and-decrement in MySQL (plain
// reads, no row lock); waiters spin with a short sleep. The lock is released
// only by its holder (compare-and-delete).
type RedisLockOrderer struct {
	DB    *sql.DB
	Redis redis.UniversalClient
	// TTL is the lock's expiry: a crashed holder frees it after TTL.
	TTL time.Duration
	// Wait bounds how long a request waits for the lock before 503.
	Wait time.Duration
}

var unlockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func lockKey(itemID int64) string { return fmt.Sprintf("bench:baseline:lock:{item:%d}", itemID) }

// Order implements Orderer.
func (o RedisLockOrderer) Order(ctx context.Context, itemID, userID int64, qty int, idemKey string) (verdict, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	token, key := hex.EncodeToString(b[:]), lockKey(itemID)
	deadline := time.Now().Add(o.Wait)
	for {
		ok, err := o.Redis.SetNX(ctx, key, token, o.TTL).Result()
		if err != nil {
			return verdict{}, fmt.Errorf("baseline lock: %w", err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return verdict{Code: http.StatusServiceUnavailable, Error: "unavailable"}, nil
		}
		select {
		case <-ctx.Done():
			return verdict{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = unlockScript.Run(uctx, o.Redis, []string{key}, token).Err()
	}()
	// A plain read: the Redis lock is what serialises the requests.
	return orderInTx(ctx, o.DB, "SELECT stock FROM baseline_items WHERE id = ?", itemID, userID, qty, idemKey)
}

// orderInTx is one order in a READ COMMITTED transaction: the item's stock
// read by stockQuery (the row lock of baseline (a), or a plain read under
// baseline (b)'s Redis lock), then checkAndOrder.
func orderInTx(ctx context.Context, db *sql.DB, stockQuery string, itemID, userID int64, qty int, idemKey string) (verdict, error) {
	var v verdict
	err := store.RunInTx(ctx, db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		var stock int
		if err := tx.QueryRowContext(ctx, stockQuery, itemID).Scan(&stock); err != nil {
			return err
		}
		var err error
		v, err = checkAndOrder(ctx, tx, itemID, userID, qty, idemKey, stock)
		return err
	})
	return v, mapNoItem(err, &v)
}

// checkAndOrder is the part baselines (a) and (b) share once they hold
// their lock: one order per buyer (a replay with the same key gets the
// first answer), then stock, then decrement and insert.
func checkAndOrder(ctx context.Context, tx *sql.Tx, itemID, userID int64, qty int, idemKey string, stock int) (verdict, error) {
	if v, done, err := buyerCheck(ctx, tx, itemID, userID, idemKey); done || err != nil {
		return v, err
	}
	if stock < qty {
		return verdict{Code: http.StatusGone, Error: "sold_out"}, nil
	}
	if _, err := tx.ExecContext(ctx, "UPDATE baseline_items SET stock = stock - ? WHERE id = ?", qty, itemID); err != nil {
		return verdict{}, fmt.Errorf("baseline: decrement: %w", err)
	}
	return insertOrder(ctx, tx, itemID, userID, qty, idemKey)
}

// buyerCheck answers a buyer who already holds an order (done): the first
// answer again for a replay with the same key, else already_purchased.
func buyerCheck(ctx context.Context, tx *sql.Tx, itemID, userID int64, idemKey string) (v verdict, done bool, err error) {
	var rid string
	var key sql.NullString
	err = tx.QueryRowContext(ctx, "SELECT request_id, idem_key FROM baseline_orders WHERE user_id = ? AND item_id = ?", userID, itemID).Scan(&rid, &key)
	switch {
	case err == nil:
		if idemKey != "" && key.Valid && key.String == idemKey {
			return verdict{Code: http.StatusAccepted, RequestID: rid}, true, nil
		}
		return verdict{Code: http.StatusConflict, Error: "already_purchased"}, true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return verdict{}, true, fmt.Errorf("baseline: buyer check: %w", err)
	}
	return verdict{}, false, nil
}

// insertOrder writes the order of a buyer whose stock was taken.
func insertOrder(ctx context.Context, tx *sql.Tx, itemID, userID int64, qty int, idemKey string) (verdict, error) {
	rid := reqid.New(itemID, time.Now())
	var k any
	if idemKey != "" {
		k = idemKey
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO baseline_orders (request_id, user_id, item_id, qty, idem_key) VALUES (?, ?, ?, ?, ?)",
		rid, userID, itemID, qty, k); err != nil {
		return verdict{}, fmt.Errorf("baseline: insert order: %w", err)
	}
	return verdict{Code: http.StatusAccepted, RequestID: rid}, nil
}

func mapNoItem(err error, v *verdict) error {
	if errors.Is(err, sql.ErrNoRows) {
		*v = verdict{Code: http.StatusNotFound, Error: "unknown_item"}
		return nil
	}
	return err
}
