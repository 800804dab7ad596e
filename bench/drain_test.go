package main

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestDrainFlags: -drain-buckets, -drain-replicas and -drain-partitions
// reach the settings and shape the drain; out-of-range values are refused
// in drain mode only, so a sale's settings built in code (which never set
// them) stay valid, and so do drain settings built in code without them
// (0 means today's drain: one bucket, one replica, one partition).
func TestDrainFlags(t *testing.T) {
	parse := func(args ...string) (Settings, error) {
		var c config.Common
		var s Settings
		var cc config.Consumer
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		err := config.Parse(fs, append([]string{"-jwt-secret", testSecret}, args...), &c, &s, &cc)
		return s, err
	}
	s, err := parse("-drain", "100", "-drain-items", "1", "-drain-buckets", "8", "-drain-replicas", "4")
	if err != nil {
		t.Fatal(err)
	}
	if s.DrainBuckets != 8 || s.DrainReplicas != 4 || s.DrainPartitions != 0 || s.DrainDB != drainDB {
		t.Fatalf("settings %+v", s)
	}
	if b, r, p := drainShape(s); b != 8 || r != 4 || p != 8 {
		t.Errorf("shape of -drain-buckets 8 -drain-replicas 4: %d buckets, %d replicas, %d partitions; want 8, 4, 8", b, r, p)
	}
	s, err = parse("-drain", "100", "-drain-items", "1")
	if err != nil {
		t.Fatal(err)
	}
	if b, r, p := drainShape(s); b != 1 || r != 1 || p != 1 {
		t.Errorf("default shape: %d buckets, %d replicas, %d partitions; want today's 1, 1, 1", b, r, p)
	}
	for _, bad := range [][]string{{"-drain-buckets", "65"}, {"-drain-buckets", "-1"}, {"-drain-replicas", "17"}, {"-drain-partitions", "-1"}, {"-drain-db", "x;y"}} {
		if _, err := parse(append([]string{"-drain", "100", "-drain-items", "1"}, bad...)...); err == nil {
			t.Errorf("%v accepted in drain mode", bad)
		}
		if _, err := parse(bad...); err != nil {
			t.Errorf("%v refused outside drain mode: %v", bad, err)
		}
	}

	sale := testSettings("http://127.0.0.1:1")
	if err := sale.Validate(); err != nil {
		t.Errorf("a sale's in-code settings: %v", err)
	}
	inCode := sale
	inCode.Drain, inCode.DrainItems = 10, 1
	if err := inCode.Validate(); err != nil {
		t.Errorf("in-code drain settings without buckets or replicas: %v", err)
	}
	if b, r, p := drainShape(inCode); b != 1 || r != 1 || p != 1 {
		t.Errorf("in-code shape: %d buckets, %d replicas, %d partitions; want 1, 1, 1", b, r, p)
	}
	for _, c := range []struct{ items, buckets, replicas, partitions, want int }{
		{1, 1, 2, 0, 8}, {1, 1, 8, 0, 16}, {1, 16, 2, 0, 16}, {1000, 8, 4, 0, 12}, {1, 8, 4, 24, 24},
	} {
		s := Settings{Drain: 1000, DrainItems: c.items, DrainBuckets: c.buckets, DrainReplicas: c.replicas, DrainPartitions: c.partitions}
		if _, _, p := drainShape(s); p != c.want {
			t.Errorf("%+v: %d partitions, want %d", c, p, c.want)
		}
	}
}

// TestDrainBucketedItemTwoReplicas drains one hot item of 8 buckets with
// two order writers in one group: every message becomes an order in its
// buyer's home bucket, the 8 buckets sell out exactly, the messages are
// spread over partitions by their bucket's key, and the replicas' shares
// add up to the whole.
func TestDrainBucketedItemTwoReplicas(t *testing.T) {
	const n, buckets = 2_000, 8
	c := testenv.Common(t)
	testenv.Kafka(t)
	var cc config.Consumer
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	cc.RegisterFlags(fs)
	dbName := "flashsale_drain_t" + testenv.Suffix()
	t.Cleanup(func() { _ = dropDrainDB(context.Background(), c.DSN(), dbName) })
	s := Settings{Drain: n, DrainItems: 1, DrainBuckets: buckets, DrainReplicas: 2, DrainDB: dbName}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := drain(ctx, c, cc, s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Buckets != buckets || res.Replicas != 2 || res.Partitions != 8 || len(res.Shares) != 2 {
		t.Fatalf("result %+v", res)
	}
	var sum, parts int64
	for _, sh := range res.Shares {
		sum += sh.Orders
	}
	if sum != n {
		t.Errorf("replicas wrote %d orders together (%+v), want %d", sum, res.Shares, n)
	}
	for _, p := range res.PartitionMsgs {
		parts += p[1]
	}
	if parts != n || len(res.PartitionMsgs) < 2 {
		t.Errorf("messages by partition %v: want %d over more than one partition", res.PartitionMsgs, n)
	}
	// So few messages may all be written before the second replica joins.
	if res.SteadyMessages < 0 || res.SteadyMessages > n || (res.SteadyMessages > 0) != (res.SteadyPerSec > 0) || res.Whole <= 0 || res.Whole > res.Elapsed {
		t.Errorf("steady window: %d messages, %.0f/s, whole after %v", res.SteadyMessages, res.SteadyPerSec, res.Whole)
	}
	var out bytes.Buffer
	writeDrain(&out, res, cc)
	for _, want := range []string{"1 items of 8 buckets", "2 replicas", "replica flashsale-drain-1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}

	db, err := store.Open(ctx, drainDSN(c.DSN(), dbName), 2, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT user_id, bucket FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[int]int{}
	for rows.Next() {
		var user int64
		var b int
		if err := rows.Scan(&user, &b); err != nil {
			t.Fatal(err)
		}
		if b != stock.HomeBucket(user, buckets) {
			t.Fatalf("order of user %d in bucket %d, want its home bucket %d", user, b, stock.HomeBucket(user, buckets))
		}
		seen[b]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != buckets {
		t.Errorf("orders in %d buckets (%v), want %d", len(seen), seen, buckets)
	}
	var left sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT SUM(stock) + (SELECT SUM(stock) FROM items) FROM item_buckets").Scan(&left); err != nil || left.Int64 != 0 {
		t.Errorf("stock left after selling all %d units: %v, %v", n, left, err)
	}
}
