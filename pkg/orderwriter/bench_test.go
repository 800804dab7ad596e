package orderwriter_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

var benchUser atomic.Int64

func benchMsgs(item int64, n int) []orderlog.OrderMessage {
	out := make([]orderlog.OrderMessage, n)
	now := time.Now()
	for i := range out {
		out[i] = orderlog.OrderMessage{V: 1, RequestID: reqid.New(item, now), ItemID: item, UserID: benchUser.Add(1), Qty: 1}
	}
	return out
}

// BenchmarkHotItem measures orders/s written for ONE hot item against the
// real MariaDB, side by side:
//
//   - writer/batch=N: the consumer's item transaction alone (no Kafka, no Redis),
//   - consumer/batch=N: the whole consumer, reading b.N queued messages from
//     Kafka, writing MySQL, settling Redis and committing offsets,
//   - forupdate: the pessimistic baseline, SELECT ... FOR UPDATE and one
//     transaction per order (8 concurrent workers on the hot row).
//
// Run: go test -run '^$' -bench HotItem -benchtime 3s ./pkg/orderwriter/
func BenchmarkHotItem(b *testing.B) {
	db, _ := testenv.MySQL(b)
	rdb := testenv.Redis(b)
	st := stock.New(rdb)
	e := &env{t: b, db: db, st: st, brokers: testenv.Kafka(b)}
	newItem := func(n int) int64 {
		id := testenv.ItemID()
		e.createItem(id, int64(n)+10)
		return id
	}
	for _, size := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("writer/batch=%d", size), func(b *testing.B) {
			item := newItem(b.N)
			msgs := benchMsgs(item, b.N)
			w := &orderwriter.ItemWriter{DB: db, PaymentWindow: 15 * time.Minute, TxTimeout: 30 * time.Second}
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < len(msgs); i += size {
				if _, err := w.WriteItem(ctx, item, msgs[i:min(i+size, len(msgs))]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "orders/s")
		})
	}
	for _, size := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("consumer/batch=%d", size), func(b *testing.B) {
			e.t = b
			e.topic, e.dlq, e.group = testenv.Topics(b, 1)
			e.item = newItem(b.N)
			e.produce(encode(b, benchMsgs(e.item, b.N)), true)
			cfg := e.config()
			cfg.BatchSize = size
			cfg.BatchWait = 5 * time.Millisecond
			b.ResetTimer()
			start := time.Now()
			c, err := orderwriter.New(cfg, orderwriter.Deps{DB: db, Stock: st}, orderwriter.NewMetrics(prometheus.NewRegistry()), logger())
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = c.Run(ctx); close(done) }()
			testenv.Eventually(b, 30*time.Minute, 10*time.Millisecond, func() bool {
				return e.count("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ?", e.item) >= int64(b.N)
			}, "%d orders not all decided", b.N)
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			<-done
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
		})
	}
	b.Run("forupdate", func(b *testing.B) {
		item := newItem(b.N)
		msgs := benchMsgs(item, b.N)
		ctx := context.Background()
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(len(msgs)) {
						return
					}
					if err := forUpdateOrder(ctx, db, msgs[i]); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "orders/s")
	})
}

// forUpdateOrder is the pessimistic baseline: lock the item row, check,
// decrement, insert the order and its outcome, commit; one order per
// transaction.
func forUpdateOrder(ctx context.Context, db *sql.DB, m orderlog.OrderMessage) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var stk, price int64
	if err := tx.QueryRowContext(ctx, "SELECT stock, price_cents FROM items WHERE id = ? FOR UPDATE", m.ItemID).Scan(&stk, &price); err != nil {
		return err
	}
	if stk < int64(m.Qty) {
		return fmt.Errorf("sold out")
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET stock = stock - ? WHERE id = ?", m.Qty, m.ItemID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (request_id, user_id, item_id, qty, price_cents, status, expires_at) VALUES (?,?,?,?,?,'UNPAID',NOW(3) + INTERVAL 15 MINUTE)",
		m.RequestID, m.UserID, m.ItemID, m.Qty, price); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO request_outcomes (request_id, item_id, user_id, qty, outcome) VALUES (?,?,?,?,'ORDERED')",
		m.RequestID, m.ItemID, m.UserID, m.Qty); err != nil {
		return err
	}
	return tx.Commit()
}
