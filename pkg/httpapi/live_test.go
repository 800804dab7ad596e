package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/tally"
)

// live is the part of GET .../live the tests read.
type live struct {
	At   time.Time `json:"at"`
	Item *struct {
		ID         int64  `json:"id"`
		RedisStock *int64 `json:"redis_stock"`
	} `json:"item"`
	Audit *struct {
		OK         bool  `json:"ok"`
		RedisStock int64 `json:"redis_stock"`
		Pending    int64 `json:"pending"`
	} `json:"audit"`
	Answers         map[string]int64 `json:"answers"`
	AcceptedLatency *tally.Histogram `json:"accepted_latency"`
	ConsumerLag     *int64           `json:"consumer_lag"`
	DLQMessages     *int64           `json:"dlq_messages"`
	Unavailable     []string         `json:"unavailable"`
}

func (h *harness) live(t *testing.T, id int64) (resp, live) {
	t.Helper()
	r := h.do(http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/live", id), "", h.admin())
	var l live
	if r.Code == http.StatusOK {
		l = decode[live](t, r)
	}
	return r, l
}

// TestLiveSumsEveryReplica orders through two ingress replicas and reads
// the live view from one: its answers are both replicas' answers, by
// outcome, once each has flushed (FLASHSALE_TALLY_FLUSH).
func TestLiveSumsEveryReplica(t *testing.T) {
	a := newHarness(t, harnessOpts{ingress: func(in *config.Ingress) { in.TallyFlush = 100 * time.Millisecond }})
	b := a.replica(t)
	id := testenv.ItemID()
	a.putItem(id, 5, 1)
	user := testenv.ItemID() % 1_000_000_000
	want := map[string]int64{}
	for i := range 6 { // 5 units: five 202s, then sold out
		rep := []*harness{a, b}[i%2]
		r := rep.order(user+int64(i), id, 1, "")
		want[code(t, r)]++
	}
	if r := b.order(user, id, 1, ""); code(t, r) != "already_purchased" {
		t.Fatalf("second order of one buyer: %d %s", r.Code, r.Body)
	}
	want["already_purchased"]++
	if r := a.order(user+100, id, 2, ""); code(t, r) != "invalid_qty" {
		t.Fatalf("qty over the limit: %d %s", r.Code, r.Body)
	}
	want["invalid_qty"]++
	if want["accepted"] != 5 || want["sold_out"] != 1 {
		t.Fatalf("answers %v, want 5 accepted and 1 sold_out", want)
	}

	var l live
	var got map[string]int64
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		var r resp
		r, l = a.live(t, id)
		if r.Code != http.StatusOK {
			t.Fatalf("live: %d %s", r.Code, r.Body)
		}
		got = map[string]int64{}
		for k, n := range l.Answers {
			if n != 0 {
				got[k] = n
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(want)
	}, "live answers %v, want %v (both replicas' answers)", lazy(func() string { return fmt.Sprint(got) }), want)
	for _, k := range tally.Known {
		if _, ok := l.Answers[k]; !ok {
			t.Errorf("answers lack %q: a client must find every known outcome, at zero too", k)
		}
	}
	h := l.AcceptedLatency
	if h == nil || h.Count != 5 || len(h.Buckets) != len(tally.Bounds) || h.SumSeconds <= 0 {
		t.Fatalf("accepted latency %+v, want 5 observations in %d buckets", h, len(tally.Bounds))
	}
	for i := 1; i < len(h.Buckets); i++ {
		if h.Buckets[i].Count < h.Buckets[i-1].Count || h.Buckets[i].Count > h.Count {
			t.Fatalf("buckets not cumulative: %+v", h.Buckets)
		}
	}
	if l.Item == nil || l.Item.ID != id || l.Item.RedisStock == nil || *l.Item.RedisStock != 0 {
		t.Fatalf("item %+v, want item %d with 0 left in Redis", l.Item, id)
	}
	if l.Audit == nil || !l.Audit.OK || l.Audit.RedisStock != 0 {
		t.Fatalf("audit %+v, want ok with 0 in Redis", l.Audit)
	}
	if l.ConsumerLag == nil || l.DLQMessages == nil || *l.DLQMessages != 0 || len(l.Unavailable) != 0 {
		t.Fatalf("lag %v dlq %v unavailable %v, want both read (dlq empty) and nothing unavailable", l.ConsumerLag, l.DLQMessages, l.Unavailable)
	}
	if l.At.IsZero() || time.Since(l.At) > time.Minute {
		t.Fatalf("at %v", l.At)
	}
}

// TestLiveKafkaDown reads the live view with the brokers unreachable: 200
// with the Redis and MySQL parts, lag and DLQ null and "kafka" named.
func TestLiveKafkaDown(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	id := testenv.ItemID()
	h.putItem(id, 3, 1)
	h.srv.cfg.Brokers = []string{testenv.FreeAddr(t)} // nothing listens there
	start := time.Now()
	r, l := h.live(t, id)
	if r.Code != http.StatusOK {
		t.Fatalf("live with Kafka down: %d %s, want 200 with the parts it could read", r.Code, r.Body)
	}
	if !slices.Equal(l.Unavailable, []string{"kafka"}) || l.ConsumerLag != nil || l.DLQMessages != nil {
		t.Fatalf("unavailable %v lag %v dlq %v, want [kafka] and both null", l.Unavailable, l.ConsumerLag, l.DLQMessages)
	}
	if l.Item == nil || l.Audit == nil || !l.Audit.OK || l.Answers == nil {
		t.Fatalf("item %v audit %v answers %v: the parts that could be read are missing", l.Item, l.Audit, l.Answers)
	}
	t.Logf("answered in %v with Kafka unreachable", time.Since(start))
}

// TestLiveRefusals: an unknown item is 404, a bad id 400, a buyer 403.
func TestLiveRefusals(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	if r, _ := h.live(t, testenv.ItemID()); r.Code != http.StatusNotFound || code(t, r) != "not_found" {
		t.Fatalf("unknown item: %d %s", r.Code, r.Body)
	}
	if r := h.do(http.MethodGet, "/api/v1/admin/items/x/live", "", h.admin()); r.Code != http.StatusBadRequest {
		t.Fatalf("bad id: %d %s", r.Code, r.Body)
	}
	id := testenv.ItemID()
	h.putItem(id, 3, 1)
	if r := h.do(http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/live", id), "", h.as(7)); r.Code != http.StatusForbidden {
		t.Fatalf("buyer's token: %d %s", r.Code, r.Body)
	}
}

// code names an order answer as the tally does: "accepted" for a 202, else
// the error code.
func code(t *testing.T, r resp) string {
	t.Helper()
	if r.Code == http.StatusAccepted {
		return tally.Accepted
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Error == "" {
		t.Fatalf("answer %d %s has no error code", r.Code, r.Body)
	}
	return e.Error
}
