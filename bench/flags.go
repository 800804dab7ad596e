package main

import (
	"flag"
	"fmt"
	"net/url"
	"time"
)

// Settings are the bench tool's own flags. Like every flashsale flag each one
// can come from FLASHSALE_<NAME> (so -jwt-secret reads FLASHSALE_JWT_SECRET,
// the secret the ingress verifies with); the command line wins.
type Settings struct {
	// Target is the flashsale ingress base URL.
	Target string
	// Buyers is the number of distinct buyers, each sending one order attempt.
	Buyers int
	// Units is the stock of the item created for the run.
	Units int
	// Buckets is the sale item's stock bucket count (flashsale only).
	Buckets int
	// Rate is the open-loop request rate per second (vegeta). Open loop keeps
	// latency honest: a slow server does not slow the arrival of buyers
	// (no coordinated omission).
	Rate int
	// Concurrency, when > 0, switches to closed-loop mode: that many workers,
	// each sending its next request when the previous one is answered.
	Concurrency int
	// Duration caps the attack; 0 means "until every attempt was sent".
	Duration time.Duration
	// Requests caps the number of attempts; 0 means all of them.
	Requests int
	// DupFraction of buyers click twice (a second attempt without the key).
	DupFraction float64
	// ReplayFraction of buyers retry with the same Idempotency-Key.
	ReplayFraction float64
	// PayFraction of accepted buyers pay once their order is UNPAID.
	PayFraction float64
	// JSON prints the machine-readable report on stdout instead of text.
	JSON bool
	// Compare runs the two baselines and flashsale one after the other.
	Compare bool
	// Floor measures the HTTP and pipeline floors after the sale, in the
	// same invocation, and reports flashsale's rates over them (floor.go);
	// -compare always does.
	Floor bool
	// Baselines chooses which baselines -compare runs: "a", "b" or "a,b".
	Baselines string
	// JWTSecret signs buyer and admin tokens (HS256).
	JWTSecret string
	// PollTimeout bounds how long accepted requests are polled after the attack.
	PollTimeout time.Duration
	// PollInterval is the pause between polling rounds.
	PollInterval time.Duration
	// PollWait, when above 0, makes each status poll a long poll
	// (GET ...?wait=): one request per accepted order instead of one per
	// round, to compare with plain polling.
	PollWait time.Duration
	// OrderWait, when above 0, sends each order with ?wait=: its 202
	// carries the status once the order is written, and an order that
	// settled within the wait needs no poll (one request per order).
	OrderWait time.Duration
	// ReapWait bounds how long to wait, after settling, for the reaper to
	// cancel unpaid orders so its work shows in the audit (0 = don't wait).
	ReapWait time.Duration
	// RequestTimeout bounds one HTTP request.
	RequestTimeout time.Duration
	// ItemID is the item to create; 0 picks a fresh random id.
	ItemID int64
	// Seed makes the workload (who duplicates, replays, pays; the order of
	// arrival) reproducible.
	Seed int64
	// OptimisticRetries bounds baseline (c)'s retries of one order after a
	// failed compare-and-set (then 503).
	OptimisticRetries int
	// Items spreads the sale over that many items (buyer b orders item
	// b mod Items; the units are split evenly): 1 (or 0, Settings built in
	// code) is one hot item, many items are the low-conflict sale.
	Items int
	// BaselineDB is the MySQL database the baselines create their tables in,
	// never flashsale's own.
	BaselineDB string
	// Quiet turns off the progress line.
	Quiet bool
	// IngressMetrics is the ingress's /metrics URL (its ops listener,
	// FLASHSALE_METRICS_ADDR): the Kafka publish histogram is scraped
	// before and after flashsale's attack; "" = not scraped.
	IngressMetrics string
	// ReaperMetrics is the reaper's /metrics URL: its count of live-audit
	// reports (flashsale_audit_reported_total) is read before and after
	// flashsale's run; "" = not read.
	ReaperMetrics string
	// HTML, when set, is the file the self-contained HTML report is written
	// to: the summary and charts of each run's timeline (sampled once a
	// second only then).
	HTML string
	// Drain, when above 0, selects the drain mode (bench/drain.go): that
	// many orders queued in Kafka, then written by the real consumer.
	Drain int
	// DrainItems spreads the drain's orders over that many items (1: one hot
	// item on one partition).
	DrainItems int
	// DrainSample is how many orders baseline (a) writes after the drain.
	DrainSample int
	// DrainCPUProfile, when set, is where the CPU profile of the drain goes.
	DrainCPUProfile string
	// DrainBuckets splits each drain item's stock over that many stock
	// buckets (issue 14); 0 or 1 = unbucketed, today's single stock row.
	DrainBuckets int
	// DrainReplicas is how many order writers (consumer replicas of one
	// group, each with its own MySQL pool) drain the topic; 0 or 1 = one.
	DrainReplicas int
	// DrainPartitions is the drain topic's partition count; 0 = 12 for
	// many items, 1 for one unbucketed hot item with one replica (today's
	// path), otherwise max(8, 2 x replicas, buckets).
	DrainPartitions int
	// DrainDB is the database the drain drops and recreates each run.
	DrainDB string
}

// RegisterFlags implements config.Registerer.
func (s *Settings) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Target, "target", "http://127.0.0.1:8080", "flashsale ingress base URL")
	fs.IntVar(&s.Buyers, "buyers", 50_000, "distinct buyers, one attempt each (plus duplicates and replays)")
	fs.IntVar(&s.Units, "units", 1_000, "stock of the sale item")
	fs.IntVar(&s.Buckets, "buckets", 1, "stock buckets of the sale item on flashsale (1 = one stock row; more spreads it over Redis slots, Kafka keys and MySQL rows)")
	fs.IntVar(&s.Rate, "rate", 4_000, "open-loop requests per second (vegeta); ignored when -concurrency > 0")
	fs.IntVar(&s.Concurrency, "concurrency", 0, "closed-loop workers; > 0 selects concurrency mode (-compare defaults to 64)")
	fs.DurationVar(&s.Duration, "duration", 0, "cap on the attack time, 0 = until every attempt was sent")
	fs.IntVar(&s.Requests, "requests", 0, "cap on the number of attempts, 0 = all")
	fs.Float64Var(&s.DupFraction, "dup", 0.02, "fraction of buyers who send a second attempt without the Idempotency-Key")
	fs.Float64Var(&s.ReplayFraction, "replay", 0.02, "fraction of buyers who replay their attempt with the same Idempotency-Key")
	fs.Float64Var(&s.PayFraction, "pay", 0.5, "fraction of buyers with an UNPAID order who pay")
	fs.BoolVar(&s.JSON, "json", false, "print the report as JSON on stdout")
	fs.BoolVar(&s.Compare, "compare", false, "run baseline (a) SELECT FOR UPDATE, baseline (b) Redis lock, then flashsale, same workload")
	fs.BoolVar(&s.Floor, "floor", false, "after the sale, measure the HTTP floor (net/http + JWT check answering 410) and the pipeline floor (admission script + Kafka produce, no HTTP) at the same concurrency and report flashsale's per-phase rates over them (closed loop, -concurrency defaults to 64); -compare includes it")
	fs.StringVar(&s.Baselines, "baselines", "a,b", "baselines -compare runs before flashsale, any of a (SELECT FOR UPDATE), b (Redis lock), c (optimistic version compare-and-set), comma-separated")
	fs.IntVar(&s.OptimisticRetries, "optimistic-retries", 10, "baseline (c): retries of one order after a failed compare-and-set, then 503")
	fs.IntVar(&s.Items, "items", 1, "items the sale is spread over (buyer b orders item b mod items; units split evenly), 1 = one hot item")
	fs.StringVar(&s.JWTSecret, "jwt-secret", "", "HS256 secret the ingress verifies tokens with")
	fs.DurationVar(&s.PollTimeout, "poll-timeout", 60*time.Second, "how long accepted requests are polled to a terminal status after the attack")
	fs.DurationVar(&s.PollInterval, "poll-interval", 250*time.Millisecond, "pause between polling rounds")
	fs.DurationVar(&s.PollWait, "poll-wait", 0, "long-poll each accepted request with ?wait= of this long (e.g. 10s), 0 = plain polling every -poll-interval")
	fs.DurationVar(&s.OrderWait, "order-wait", 0, "send each order with ?wait= of this long (e.g. 10s): its 202 carries the status once written, and only orders still PENDING are polled; 0 = a plain 202, then polls")
	fs.DurationVar(&s.ReapWait, "reap-wait", 30*time.Second, "after settling, wait up to this long for the reaper to cancel unpaid orders, 0 = don't wait")
	fs.DurationVar(&s.RequestTimeout, "request-timeout", 10*time.Second, "timeout of one HTTP request")
	fs.Int64Var(&s.ItemID, "item", 0, "item id to create, 0 = a fresh random id")
	fs.Int64Var(&s.Seed, "seed", 1, "seed of the workload plan")
	fs.StringVar(&s.BaselineDB, "baseline-db", "flashsale_bench", "MySQL database for the baselines' own tables (created if missing)")
	fs.BoolVar(&s.Quiet, "quiet", false, "no progress line on stderr")
	fs.StringVar(&s.ReaperMetrics, "reaper-metrics", "http://127.0.0.1:9102/metrics", "the reaper's /metrics URL, read for the live auditor's reports during the run (a report on a sale whose final audit passes fails the run); empty = don't read")
	fs.StringVar(&s.IngressMetrics, "ingress-metrics", "http://127.0.0.1:9103/metrics", "the ingress's /metrics URL on its ops listener, scraped for the Kafka publish latency; empty = don't scrape")
	fs.IntVar(&s.Drain, "drain", 0, "drain mode: queue this many orders, time the real consumer writing them, then baseline (a) over -drain-sample; 0 = a sale")
	fs.IntVar(&s.DrainItems, "drain-items", 1000, "items the drain's orders are spread over (1 = one hot item on one partition)")
	fs.IntVar(&s.DrainSample, "drain-sample", 50_000, "orders baseline (a) writes after the drain, with the same MySQL pool (0 = none)")
	fs.StringVar(&s.DrainCPUProfile, "drain-cpuprofile", "", "write a CPU profile of the drain (this process: the consumer) to this file")
	fs.IntVar(&s.DrainBuckets, "drain-buckets", 1, "stock buckets of each drain item, 1 to 64 (1 = one stock row, today's path)")
	fs.IntVar(&s.DrainReplicas, "drain-replicas", 1, "order writers (consumer replicas of one group, each its own MySQL pool) draining the topic, 1 to 16")
	fs.IntVar(&s.DrainPartitions, "drain-partitions", 0, "partitions of the drain topic; 0 = 12 for many items, 1 for one unbucketed item and one replica, else max(8, 2 x replicas, buckets)")
	fs.StringVar(&s.DrainDB, "drain-db", "flashsale_drain", "MySQL database the drain drops and recreates each run (never flashsale's own)")
	fs.StringVar(&s.HTML, "html", "", "also write a self-contained HTML report with charts of the sale's time line to this file")
}

// Validate implements config.Registerer.
func (s *Settings) Validate() error {
	u, err := url.Parse(s.Target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("FLASHSALE_TARGET: %q (expected an http URL such as http://127.0.0.1:8080)", s.Target)
	}
	switch {
	case s.Buyers < 1:
		return fmt.Errorf("FLASHSALE_BUYERS: %d (expected at least 1)", s.Buyers)
	case s.Units < 1:
		return fmt.Errorf("FLASHSALE_UNITS: %d (expected at least 1)", s.Units)
	case s.Buckets < 0 || s.Buckets > 1000:
		return fmt.Errorf("FLASHSALE_BUCKETS: %d (expected 1 to 1000; the ingress refuses more than its FLASHSALE_MAX_BUCKETS)", s.Buckets)
	case s.Rate < 1 && s.Concurrency < 1:
		return fmt.Errorf("FLASHSALE_RATE: %d (expected a positive rate, or set -concurrency)", s.Rate)
	case s.Concurrency < 0:
		return fmt.Errorf("FLASHSALE_CONCURRENCY: %d (expected 0 or more)", s.Concurrency)
	case s.Requests < 0 || s.Duration < 0:
		return fmt.Errorf("FLASHSALE_REQUESTS, FLASHSALE_DURATION: expected 0 or more")
	case !fraction(s.DupFraction) || !fraction(s.ReplayFraction) || !fraction(s.PayFraction):
		return fmt.Errorf("FLASHSALE_DUP, FLASHSALE_REPLAY, FLASHSALE_PAY: expected fractions from 0 to 1")
	case len(s.JWTSecret) < 16:
		return fmt.Errorf("FLASHSALE_JWT_SECRET: missing or shorter than 16 bytes (expected the ingress's secret)")
	case s.PollTimeout <= 0 || s.PollInterval <= 0 || s.RequestTimeout <= 0 || s.ReapWait < 0:
		return fmt.Errorf("FLASHSALE_POLL_TIMEOUT, FLASHSALE_POLL_INTERVAL, FLASHSALE_REQUEST_TIMEOUT: expected positive durations")
	case s.PollWait < 0 || s.PollWait > 2*time.Minute:
		return fmt.Errorf("FLASHSALE_POLL_WAIT: %v (expected 0 for plain polling, or up to 2m)", s.PollWait)
	case s.OrderWait < 0 || s.OrderWait > 2*time.Minute:
		return fmt.Errorf("FLASHSALE_ORDER_WAIT: %v (expected 0 for a plain 202, or up to 2m)", s.OrderWait)
	case s.ItemID < 0:
		return fmt.Errorf("FLASHSALE_ITEM: %d (expected 0 or a positive id)", s.ItemID)
	case s.Items < 0 || s.Items > 100_000 || (s.Items > 1 && s.Units < s.Items):
		return fmt.Errorf("FLASHSALE_ITEMS: %d (expected 1 to 100000 items, at most one per unit; 0 is 1)", s.Items)
	case s.OptimisticRetries < 0:
		return fmt.Errorf("FLASHSALE_OPTIMISTIC_RETRIES: %d (expected 0 or more)", s.OptimisticRetries)
	case s.Drain < 0 || s.DrainSample < 0 || (s.Drain > 0 && (s.DrainItems < 1 || s.DrainItems > s.Drain)):
		return fmt.Errorf("FLASHSALE_DRAIN, FLASHSALE_DRAIN_ITEMS, FLASHSALE_DRAIN_SAMPLE: expected 0 or more orders over 1 to that many items")
	case s.Drain > 0 && (s.DrainBuckets < 0 || s.DrainBuckets > maxDrainBuckets || s.DrainReplicas < 0 || s.DrainReplicas > maxDrainReplicas || s.DrainPartitions < 0):
		return fmt.Errorf("FLASHSALE_DRAIN_BUCKETS, FLASHSALE_DRAIN_REPLICAS, FLASHSALE_DRAIN_PARTITIONS: %d, %d, %d (expected 1 to %d buckets, 1 to %d replicas, 0 or more partitions)",
			s.DrainBuckets, s.DrainReplicas, s.DrainPartitions, maxDrainBuckets, maxDrainReplicas)
	case s.Drain > 0 && s.DrainDB != "" && !identifier(s.DrainDB):
		return fmt.Errorf("FLASHSALE_DRAIN_DB: %q (expected letters, digits and _)", s.DrainDB)
	case !identifier(s.BaselineDB):
		return fmt.Errorf("FLASHSALE_BASELINE_DB: %q (expected letters, digits and _)", s.BaselineDB)
	}
	if u, err := url.Parse(s.IngressMetrics); s.IngressMetrics != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fmt.Errorf("FLASHSALE_INGRESS_METRICS: %q (expected the ingress's metrics URL such as http://127.0.0.1:9103/metrics, or empty)", s.IngressMetrics)
	}
	if u, err := url.Parse(s.ReaperMetrics); s.ReaperMetrics != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fmt.Errorf("FLASHSALE_REAPER_METRICS: %q (expected the reaper's metrics URL such as http://127.0.0.1:9102/metrics, or empty)", s.ReaperMetrics)
	}
	if _, err := parseBaselines(s.Baselines); err != nil {
		return fmt.Errorf("-baselines (FLASHSALE_BASELINES): %q: %v (expected any of a, b, c, comma-separated)", s.Baselines, err)
	}
	return nil
}

func fraction(f float64) bool { return f >= 0 && f <= 1 }

// identifier accepts names safe to splice into CREATE DATABASE.
func identifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
