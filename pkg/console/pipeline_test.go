package console_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/inproc"
	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

const secret = "console-test-secret-0123456789abcdef"

// pipeline is the real thing the console watches: an ingress (pkg/httpapi,
// the ingress binary's code) behind a real listener, and a real consumer
// writing the orders to MySQL, on the stack's MySQL (a database of its
// own), Redis and Kafka (topics of their own).
type pipeline struct {
	url    string
	count  func(t *testing.T, q string, args ...any) int64
	client *http.Client
	// What a second ingress on the same stores needs.
	dsn     string
	st      *stock.Store
	ingress config.Ingress
}

func startPipeline(t *testing.T) *pipeline {
	t.Helper()
	s := inproc.New(t)
	in := inproc.Settings(secret)
	in.TallyFlush = time.Second
	g := s.Ingress(t, in, inproc.Options{})
	s.Consumer(t, orderwriter.Config{GiveUpAfter: 30 * time.Second, MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, LagInterval: 500 * time.Millisecond}, g.Stock, nil, nil)
	db := s.DB
	p := &pipeline{url: g.URL, client: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 32}}, dsn: s.DSN, st: g.Stock, ingress: in}
	p.count = func(t *testing.T, q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return p
}

// token is a bearer token of user, an admin's when admin.
func token(t *testing.T, user int64, admin bool) string {
	t.Helper()
	role := ""
	if admin {
		role = "admin"
	}
	tok, err := auth.Sign(secret, user, role, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// call sends one request and returns its status and body.
func (p *pipeline) call(method, path, tok, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, p.url+path, bytes.NewBufferString(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (p *pipeline) mustCall(t *testing.T, method, path, tok, body string, want int) []byte {
	t.Helper()
	code, b, err := p.call(method, path, tok, body)
	if err != nil || code != want {
		t.Fatalf("%s %s: %d %s %v, want %d", method, path, code, b, err, want)
	}
	return b
}

// putItem creates an item whose sale starts in startsIn (negative: open
// already) and lasts an hour from now or from its start, whichever is later.
func (p *pipeline) putItem(t *testing.T, admin string, id int64, name string, stockQty int64, buckets int, startsIn time.Duration) {
	t.Helper()
	if err := p.tryPutItem(admin, id, name, stockQty, buckets, startsIn); err != nil {
		t.Fatal(err)
	}
}

// tryPutItem is putItem for another goroutine than the test's.
func (p *pipeline) tryPutItem(admin string, id int64, name string, stockQty int64, buckets int, startsIn time.Duration) error {
	now := time.Now().UTC()
	body := fmt.Sprintf(`{"name":%q,"price_cents":1299,"stock":%d,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"buckets":%d}`,
		name, stockQty, now.Add(startsIn).Format(time.RFC3339), now.Add(max(startsIn, 0)+time.Hour).Format(time.RFC3339), buckets)
	code, b, err := p.call(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), admin, body)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("PUT item %d: %d %s %v, want 200", id, code, b, err)
	}
	return nil
}

// live is the parts of a /live read the test compares with the page.
type live struct {
	At   time.Time `json:"at"`
	Item *struct {
		State      string `json:"state"`
		Stock      int64  `json:"stock"`
		RedisStock *int64 `json:"redis_stock"`
	} `json:"item"`
	Audit *struct {
		RedisStock int64 `json:"redis_stock"`
		DBStock    int64 `json:"db_stock"`
		Pending    int64 `json:"pending"`
		PendingQty int64 `json:"pending_qty"`
		Unpaid     int64 `json:"unpaid"`
		Paid       int64 `json:"paid"`
		Cancelled  int64 `json:"cancelled"`
		Rejected   int64 `json:"rejected"`
		OK         bool  `json:"ok"`
		PerBucket  []struct {
			Bucket     int   `json:"bucket"`
			RedisStock int64 `json:"redis_stock"`
			DBStock    int64 `json:"db_stock"`
			Pending    int64 `json:"pending"`
			PendingQty int64 `json:"pending_qty"`
		} `json:"per_bucket"`
		Violations []string `json:"violations"`
	} `json:"audit"`
	Answers     map[string]int64 `json:"answers"`
	ConsumerLag *int64           `json:"consumer_lag"`
	DLQMessages *int64           `json:"dlq_messages"`
	Unavailable []string         `json:"unavailable"`
}

// readLive reads /live and returns it with the moment its answer was in.
func (p *pipeline) readLive(t *testing.T, admin string, id int64) (live, time.Time) {
	t.Helper()
	b := p.mustCall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/live", id), admin, "", http.StatusOK)
	done := time.Now()
	var l live
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("live: %v: %s", err, b)
	}
	if l.Item == nil || l.Audit == nil || l.Answers == nil || l.ConsumerLag == nil || l.DLQMessages == nil || len(l.Unavailable) > 0 {
		t.Fatalf("live: a part is unavailable on a healthy stack: %s", b)
	}
	return l, done
}

// figures maps a read to the page's data-k keys, as numbers; want lists
// the keys the page must show.
func (l live) figures() map[string]int64 {
	f := map[string]int64{
		"item.stock": l.Item.Stock, "audit.redis_stock": l.Audit.RedisStock, "audit.db_stock": l.Audit.DBStock,
		"audit.pending": l.Audit.Pending, "audit.pending_qty": l.Audit.PendingQty, "audit.unpaid": l.Audit.Unpaid,
		"audit.paid": l.Audit.Paid, "audit.cancelled": l.Audit.Cancelled, "audit.rejected": l.Audit.Rejected,
		"consumer_lag": *l.ConsumerLag, "dlq_messages": *l.DLQMessages,
	}
	if l.Item.RedisStock != nil {
		f["item.redis_stock"] = *l.Item.RedisStock
	}
	for _, b := range l.Audit.PerBucket {
		for k, v := range map[string]int64{"redis_stock": b.RedisStock, "db_stock": b.DBStock, "pending": b.Pending, "pending_qty": b.PendingQty} {
			f[fmt.Sprintf("bucket.%d.%s", b.Bucket, k)] = v
		}
	}
	for k, n := range l.Answers {
		f["answers."+k+".total"] = n
	}
	return f
}

// screenshotPath is where FLASHSALE_CONSOLE_SCREENSHOT asks for a picture
// of the running console ("" = none); a relative path is from the
// repository's root (docs/console.png), not from this package.
func screenshotPath(t *testing.T) string {
	p := os.Getenv("FLASHSALE_CONSOLE_SCREENSHOT")
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, p)
		}
		if filepath.Dir(d) == d {
			t.Fatalf("FLASHSALE_CONSOLE_SCREENSHOT=%s: no go.mod above %s", p, dir)
		}
	}
}

// answer is one buyer's order and what the ingress said.
type answer struct {
	start, done time.Time
	status      int
	code        string
	err         error
}

// buyers order one unit each, as fresh users, until stop is closed.
type buyers struct {
	mu      sync.Mutex
	answers []answer
	stop    chan struct{}
	wg      sync.WaitGroup
}

func (p *pipeline) buy(t *testing.T, id int64, n int, pause time.Duration) *buyers {
	bs := &buyers{stop: make(chan struct{})}
	next := make(chan int64)
	go func() { // fresh user ids, one per order
		for u := testenv.ItemID(); ; u++ {
			select {
			case next <- u:
			case <-bs.stop:
				return
			}
		}
	}()
	for range n {
		bs.wg.Add(1)
		go func() {
			defer bs.wg.Done()
			tk := time.NewTicker(pause) // a buyer's pace: at most an order a pause
			defer tk.Stop()
			for {
				var user int64
				select {
				case <-bs.stop:
					return
				case user = <-next:
				}
				tok, err := auth.Sign(secret, user, "", time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				a := answer{start: time.Now()}
				code, body, err := p.call(http.MethodPost, "/api/v1/orders", tok, fmt.Sprintf(`{"item_id":%d,"qty":1}`, id))
				a.done, a.status, a.err = time.Now(), code, err
				var e struct {
					Error string `json:"error"`
				}
				_ = json.Unmarshal(body, &e)
				a.code = e.Error
				bs.mu.Lock()
				bs.answers = append(bs.answers, a)
				bs.mu.Unlock()
				select {
				case <-bs.stop:
					return
				case <-tk.C:
				}
			}
		}()
	}
	return bs
}

// count is how many answers so far match.
func (bs *buyers) count(match func(answer) bool) int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	n := 0
	for _, a := range bs.answers {
		if match(a) {
			n++
		}
	}
	return n
}

func (bs *buyers) halt() []answer {
	close(bs.stop)
	bs.wg.Wait()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return bs.answers
}
