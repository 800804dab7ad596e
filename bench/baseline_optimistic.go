package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"

	"github.com/go-sql-driver/mysql"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// OptimisticOrderer is baseline (c), the seed's optimistic lock: each
// attempt is one MySQL transaction that reads the item's stock and version
// without a lock, checks the buyer and the stock, and decrements with a
// compare-and-set on the version (`UPDATE … SET stock = stock - n, version =
// version + 1 WHERE id = ? AND version = ?`). No row is affected when another
// order committed in between: the transaction is rolled back and the order
// tried again, up to MaxRetries times, then answered 503. The seed's claim is
// that this beats FOR UPDATE when conflicts are rare; RetryStats shows how
// rare they were.
type OptimisticOrderer struct {
	DB *sql.DB
	// MaxRetries bounds the attempts after the first (10 when 0).
	MaxRetries int
	stats      *retryStats
}

// NewOptimisticOrderer returns baseline (c) on db.
func NewOptimisticOrderer(db *sql.DB, maxRetries int) *OptimisticOrderer {
	if maxRetries <= 0 {
		maxRetries = 10
	}
	return &OptimisticOrderer{DB: db, MaxRetries: maxRetries, stats: &retryStats{}}
}

// errConflict is a compare-and-set that found another version.
var errConflict = errors.New("baseline: version changed")

// Order implements Orderer.
func (o *OptimisticOrderer) Order(ctx context.Context, itemID, userID int64, qty int, idemKey string) (verdict, error) {
	for retries := 0; ; retries++ {
		v, ordered, err := o.attempt(ctx, itemID, userID, qty, idemKey)
		if !errors.Is(err, errConflict) {
			if err == nil && ordered { // not a replay's first answer again
				o.stats.accepted(retries)
			}
			return v, mapNoItem(err, &v)
		}
		if retries == o.MaxRetries {
			o.stats.gaveUpOne()
			return verdict{Code: http.StatusServiceUnavailable, Error: "unavailable"}, nil
		}
	}
}

// attempt is one try; ordered says it wrote a new order.
func (o *OptimisticOrderer) attempt(ctx context.Context, itemID, userID int64, qty int, idemKey string) (v verdict, ordered bool, err error) {
	err = store.RunInTx(ctx, o.DB, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		var stock int
		var version int64
		if err := tx.QueryRowContext(ctx, "SELECT stock, version FROM baseline_items WHERE id = ?", itemID).Scan(&stock, &version); err != nil {
			return err
		}
		var done bool
		if v, done, err = buyerCheck(ctx, tx, itemID, userID, idemKey); done || err != nil {
			return err
		}
		if stock < qty {
			v = verdict{Code: http.StatusGone, Error: "sold_out"}
			return nil
		}
		res, err := tx.ExecContext(ctx, "UPDATE baseline_items SET stock = stock - ?, version = version + 1 WHERE id = ? AND version = ?", qty, itemID, version)
		if err != nil {
			return fmt.Errorf("baseline: compare-and-set: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errConflict // rolled back by RunInTx
		}
		v, err = insertOrder(ctx, tx, itemID, userID, qty, idemKey)
		ordered = err == nil
		return err
	})
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 { // the same buyer ordered concurrently
		return verdict{Code: http.StatusConflict, Error: "already_purchased"}, false, nil
	}
	return v, ordered && err == nil, err
}

// Retries returns the run's retry figures and starts counting afresh.
func (o *OptimisticOrderer) Retries() *RetryStats { return o.stats.take() }

// RetryStats are baseline (c)'s compare-and-set retries per accepted order
// (an order that needed no retry counts 0), and the orders given up after
// MaxRetries (answered 503).
type RetryStats struct {
	Accepted int64   `json:"accepted"`
	Retries  int64   `json:"retries"`
	Mean     float64 `json:"mean_per_order"`
	P50      int     `json:"p50"`
	P99      int     `json:"p99"`
	Max      int     `json:"max"`
	GaveUp   int64   `json:"gave_up"`
}

type retryStats struct {
	mu      sync.Mutex
	per     map[int]int64 // retries -> accepted orders
	giveUps int64
}

func (s *retryStats) accepted(retries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.per == nil {
		s.per = map[int]int64{}
	}
	s.per[retries]++
}

func (s *retryStats) gaveUpOne() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.giveUps++
}

func (s *retryStats) take() *RetryStats {
	s.mu.Lock()
	per, gave := s.per, s.giveUps
	s.per, s.giveUps = nil, 0
	s.mu.Unlock()
	return summarizeRetries(per, gave)
}

// summarizeRetries turns a histogram of retries per accepted order into
// its figures (quantiles by rank, nearest-rank).
func summarizeRetries(per map[int]int64, gaveUp int64) *RetryStats {
	r := &RetryStats{GaveUp: gaveUp}
	keys := make([]int, 0, len(per))
	for k, n := range per {
		keys = append(keys, k)
		r.Accepted += n
		r.Retries += int64(k) * n
	}
	if r.Accepted == 0 {
		return r
	}
	sort.Ints(keys)
	r.Mean = float64(r.Retries) / float64(r.Accepted)
	r.Max = keys[len(keys)-1]
	rank := func(q float64) int {
		want := int64(q*float64(r.Accepted) + 0.999999) // ceil, at least 1
		var seen int64
		for _, k := range keys {
			if seen += per[k]; seen >= want {
				return k
			}
		}
		return r.Max
	}
	r.P50, r.P99 = rank(0.5), rank(0.99)
	return r
}

// retriesLine is the retry figures as the text and HTML reports print them.
func retriesLine(x *RetryStats) string {
	return fmt.Sprintf("optimistic retries per 202: mean %.2f  p50 %d  p99 %d  max %d (%d retries for %d orders); %d orders gave up (503)",
		x.Mean, x.P50, x.P99, x.Max, x.Retries, x.Accepted, x.GaveUp)
}
