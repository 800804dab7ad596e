package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// withDLQ gives the harness's server a dead-letter topic of its own and
// writes letters to it as the consumer does (pkg/orderwriter/dlq.go: the
// original key, value and headers, then the flashsale-* headers).
func (h *harness) withDLQ(letters ...kafka.Message) string {
	h.t.Helper()
	_, dlq, _ := testenv.Topics(h.t, 1)
	h.srv.cfg.DLQTopic = dlq
	if len(letters) == 0 {
		return dlq
	}
	w := orderlog.NewWriter(h.brokers, dlq, 10*time.Second)
	defer w.Close()
	for i := range letters {
		letters[i].Headers = append(letters[i].Headers,
			kafka.Header{Key: orderlog.HeaderDLQError, Value: []byte(fmt.Sprintf("cause %d", i))},
			kafka.Header{Key: orderlog.HeaderDLQTopic, Value: []byte(h.topic)},
			kafka.Header{Key: orderlog.HeaderDLQPartition, Value: []byte("2")},
			kafka.Header{Key: orderlog.HeaderDLQOffset, Value: []byte(strconv.Itoa(100 + i))},
			kafka.Header{Key: orderlog.HeaderDLQFailedAt, Value: []byte("2026-12-02T08:00:00.5Z")})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// One at a time, so offset i is letter i.
	for _, l := range letters {
		if err := w.WriteMessages(ctx, l); err != nil {
			h.t.Fatalf("write letter: %v", err)
		}
	}
	return dlq
}

func orderLetter(t *testing.T, item, user int64) (kafka.Message, string) {
	t.Helper()
	m := orderlog.OrderMessage{RequestID: reqid.New(item, time.Now()), ItemID: item, UserID: user, Qty: 1, ReservedMs: time.Now().UnixMilli()}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return kafka.Message{Key: m.Key(), Value: b, Headers: []kafka.Header{{Key: "traceparent", Value: []byte("00-abc-def-01")}}}, m.RequestID
}

func offsetsOf(t *testing.T, r resp) ([]int64, map[string]any) {
	t.Helper()
	if r.Code != http.StatusOK {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	page := decode[api.DeadLetterPage](t, r)
	var offs []int64
	for _, l := range page.Letters {
		offs = append(offs, l.Offset)
	}
	return offs, r.json(t)
}

// TestDLQList: pages newest first with before, oldest first with after,
// and every bound of the query refused with its code.
func TestDLQList(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	item := testenv.ItemID()
	var letters []kafka.Message
	for u := int64(1); u <= 7; u++ {
		l, _ := orderLetter(t, item, u)
		letters = append(letters, l)
	}
	h.withDLQ(letters...)
	for _, c := range []struct {
		query      string
		want       []int64
		nextBefore any
		nextAfter  any
	}{
		{"", []int64{6, 5, 4, 3, 2, 1, 0}, nil, nil},
		{"?limit=3", []int64{6, 5, 4}, 4.0, nil},
		{"?limit=3&before=4", []int64{3, 2, 1}, 1.0, nil},
		{"?limit=3&before=1", []int64{0}, nil, nil},
		{"?before=0", nil, nil, nil},
		{"?after=4&limit=10", []int64{5, 6}, nil, nil},
		{"?after=1&limit=2", []int64{2, 3}, nil, 3.0},
		{"?after=6", nil, nil, nil},
		{"?after=1&before=4", []int64{2, 3}, nil, nil},
		{"?after=0&before=5&limit=2", []int64{1, 2}, nil, 2.0},
	} {
		offs, m := offsetsOf(t, h.do(http.MethodGet, "/api/v1/admin/dlq"+c.query, "", h.admin()))
		if fmt.Sprint(offs) != fmt.Sprint(c.want) || m["next_before"] != c.nextBefore || m["next_after"] != c.nextAfter {
			t.Errorf("%q: offsets %v next_before %v next_after %v, want %v %v %v", c.query, offs, m["next_before"], m["next_after"], c.want, c.nextBefore, c.nextAfter)
		}
		if m["first_offset"] != 0.0 || m["end_offset"] != 7.0 {
			t.Errorf("%q: bounds %v %v, want 0 7", c.query, m["first_offset"], m["end_offset"])
		}
	}
	_, m := offsetsOf(t, h.do(http.MethodGet, "/api/v1/admin/dlq?limit=1", "", h.admin()))
	l := m["letters"].([]any)[0].(map[string]any)
	if l["reason"] != "cause 6" || l["key"] != strconv.FormatInt(item, 10) || l["failed_at"] != "2026-12-02T08:00:00.5Z" ||
		l["source"].(map[string]any)["offset"] != 106.0 || l["request_id"] == nil {
		t.Errorf("letter 6: %v", l)
	}
	for q, code := range map[string]string{
		"?limit=0": "invalid_limit", "?limit=501": "invalid_limit", "?before=-1": "invalid_before", "?after=x": "invalid_after",
		"?after=1&after=2": "invalid_after",
	} {
		r := h.do(http.MethodGet, "/api/v1/admin/dlq"+q, "", h.admin())
		if r.Code != http.StatusBadRequest || r.json(t)["error"] != code {
			t.Errorf("%s: %d %s, want 400 %s", q, r.Code, r.Body, code)
		}
	}
	if r := h.do(http.MethodGet, "/api/v1/admin/dlq", "", h.as(5)); r.Code != http.StatusForbidden {
		t.Errorf("buyer token: %d, want 403", r.Code)
	}
}

// TestDLQShowAndReplay: a letter's payload as text or base64, whether it
// decodes, 404 for offsets the topic does not hold, a replay refused for
// a payload that would only be dead-lettered again, and a replay that puts
// the original key, value and headers on the orders topic.
func TestDLQShowAndReplay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	item := testenv.ItemID()
	good, rid := orderLetter(t, item, 9)
	h.withDLQ(good,
		kafka.Message{Key: []byte("1"), Value: []byte(`{"v":1,"request_id":"nonsense"`)},
		kafka.Message{Key: []byte("2"), Value: []byte{0xff, 0xfe, 0x00}})

	r := h.do(http.MethodGet, "/api/v1/admin/dlq/0", "", h.admin())
	m := r.json(t)
	if r.Code != 200 || m["payload"] != string(good.Value) || m["payload_encoding"] != "utf-8" || m["replayable"] != true ||
		m["request_id"] != rid || m["decision"] != nil {
		t.Fatalf("letter 0: %d %s", r.Code, r.Body)
	}
	if hs := m["headers"].([]any); len(hs) != 1 || hs[0].(map[string]any)["key"] != "traceparent" {
		t.Errorf("letter 0 headers: %v, want the original traceparent alone", hs)
	}
	m = h.do(http.MethodGet, "/api/v1/admin/dlq/1", "", h.admin()).json(t)
	if m["replayable"] != false || m["decode_error"] == nil || m["request_id"] != nil {
		t.Errorf("letter 1 (truncated JSON): %v", m)
	}
	m = h.do(http.MethodGet, "/api/v1/admin/dlq/2", "", h.admin()).json(t)
	if m["payload_encoding"] != "base64" || m["payload"] != base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0x00}) {
		t.Errorf("letter 2 (binary): %v", m)
	}
	for path, want := range map[string]int{
		"/api/v1/admin/dlq/3": 404, "/api/v1/admin/dlq/9223372036854775807": 404, "/api/v1/admin/dlq/01": 400, "/api/v1/admin/dlq/-1": 400,
	} {
		if r := h.do(http.MethodGet, path, "", h.admin()); r.Code != want {
			t.Errorf("GET %s: %d %s, want %d", path, r.Code, r.Body, want)
		}
		if r := h.do(http.MethodPost, path+"/replay", "", h.admin()); r.Code != want {
			t.Errorf("POST %s/replay: %d %s, want %d", path, r.Code, r.Body, want)
		}
	}
	for _, off := range []string{"1", "2"} {
		r := h.do(http.MethodPost, "/api/v1/admin/dlq/"+off+"/replay", "", h.admin())
		if r.Code != http.StatusConflict || r.json(t)["error"] != "not_replayable" {
			t.Errorf("replay %s: %d %s, want 409 not_replayable", off, r.Code, r.Body)
		}
	}
	if got := h.readTopic(); len(got) != 0 {
		t.Fatalf("orders topic before the replay: %v", got)
	}
	r = h.do(http.MethodPost, "/api/v1/admin/dlq/0/replay", "", h.admin())
	if m := r.json(t); r.Code != 200 || m["request_id"] != rid || m["topic"] != h.topic || m["decision"] != nil {
		t.Fatalf("replay 0: %d %s", r.Code, r.Body)
	}
	got := h.readTopic()
	if len(got) != 1 || got[0].RequestID != rid || got[0].UserID != 9 {
		t.Fatalf("orders topic after the replay: %+v, want the letter's message", got)
	}
}

// TestDLQKafkaUnreachable: with a broker that accepts and never answers, a
// list, a show and a replay each answer 503 unavailable (bounded by 5 store
// timeouts) instead of hanging, and nothing reaches the orders topic; with
// Kafka back the letter is where it was.
func TestDLQKafkaUnreachable(t *testing.T) {
	t.Parallel()
	const storeTimeout = 300 * time.Millisecond
	h := newHarness(t, harnessOpts{storeTimeout: storeTimeout})
	good, rid := orderLetter(t, testenv.ItemID(), 9)
	h.withDLQ(good)
	brokers := h.srv.cfg.Brokers
	h.srv.cfg.Brokers = []string{testenv.Silent(t).Addr}
	// Only a guard against a hang: 10 times the 5 store timeouts the
	// calls are bounded by. How fast the 503 comes is not asserted.
	bound := 10 * 5 * storeTimeout
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/admin/dlq"},
		{http.MethodGet, "/api/v1/admin/dlq/0"},
		{http.MethodPost, "/api/v1/admin/dlq/0/replay"},
	} {
		start := time.Now()
		r := h.do(c.method, c.path, "", h.admin())
		took := time.Since(start)
		if r.Code != http.StatusServiceUnavailable || r.json(t)["error"] != "unavailable" {
			t.Errorf("%s %s with Kafka silent: %d %s, want 503 unavailable", c.method, c.path, r.Code, r.Body)
		}
		if took > bound {
			t.Errorf("%s %s with Kafka silent took %v, want at most %v", c.method, c.path, took, bound)
		}
	}
	h.srv.cfg.Brokers = brokers
	if got := h.readTopic(); len(got) != 0 {
		t.Fatalf("orders topic after the refused replay: %+v, want nothing", got)
	}
	if m := h.do(http.MethodGet, "/api/v1/admin/dlq/0", "", h.admin()).json(t); m["request_id"] != rid {
		t.Fatalf("letter 0 with Kafka back: %v", m)
	}
}
