package ctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
)

// startConsumer runs a real order writer on g's topics, giving up on a
// permanently failing message after giveUp.
func (g *ingress) startConsumer(t *testing.T, giveUp time.Duration) {
	t.Helper()
	c, err := orderwriter.New(orderwriter.Config{Brokers: g.brokers, Topic: g.topic, DLQTopic: g.dlq, GroupID: g.group,
		GiveUpAfter: giveUp, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, LagInterval: 500 * time.Millisecond},
		orderwriter.Deps{DB: g.db, Stock: g.stock}, orderwriter.NewMetrics(prometheus.NewRegistry()), testenv.LogTail(t))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Background(t, "consumer", c.Run)
}

func (g *ingress) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := g.db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReplayTwiceOrdersOnce is the dead-letter replay's proof, on the
// real stack (ingress, Kafka, a real consumer, MySQL, Redis): a buyer's
// order is dead-lettered for a cause an operator can fix (the consumer's
// MySQL answers 1146 "table doesn't exist" on the arbiter, as when a
// consumer is deployed ahead of its migration: the order cannot be
// written and the give-up's REJECTED cannot be either, so the request stays
// undecided), the cause is fixed, and the letter is replayed twice with
// flashsalectl: exactly one order row and one decision, the second replay
// reported as already ORDERED, and the audit ok.
func TestReplayTwiceOrdersOnce(t *testing.T) {
	g := startIngress(t)
	id := testenv.ItemID()
	sid := strconv.FormatInt(id, 10)
	mustRun(t, g.lookup, "items", "create", sid, "--name", "replayed", "--price-cents", "500", "--stock", "5", "--starts-at", "-1m", "--ends-at", "+1h")
	// The cause: every insert into the arbiter fails permanently.
	if _, err := g.db.Exec(`CREATE TRIGGER ctl_missing_table BEFORE INSERT ON request_outcomes FOR EACH ROW
		SIGNAL SQLSTATE '42S02' SET MYSQL_ERRNO = 1146, MESSAGE_TEXT = 'Table request_outcomes doesn''t exist (test: a migration not applied)'`); err != nil {
		t.Fatal(err)
	}
	g.startConsumer(t, 300*time.Millisecond)

	req, _ := http.NewRequest(http.MethodPost, g.url+"/api/v1/orders", bytes.NewBufferString(fmt.Sprintf(`{"item_id":%d,"qty":1}`, id)))
	req.Header.Set("Authorization", "Bearer "+g.mint(t, 77, false))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var acc struct {
		RequestID string `json:"request_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&acc)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || acc.RequestID == "" {
		t.Fatalf("order: %d %+v", resp.StatusCode, acc)
	}

	// Dead-lettered, undecided.
	var page api.DeadLetterPage
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		_, out, _ := run(t, g.lookup, "dlq", "list", "-o", "json")
		return json.Unmarshal([]byte(out), &page) == nil && len(page.Letters) == 1
	}, "the order was not dead-lettered")
	l := page.Letters[0]
	if l.RequestID != acc.RequestID || !strings.Contains(l.Reason, "1146") || l.Source.Topic != g.topic {
		t.Fatalf("letter: %+v", l)
	}
	out := mustRun(t, g.lookup, "dlq", "show", strconv.FormatInt(l.Offset, 10))
	if !strings.Contains(out, "undecided") || !strings.Contains(out, acc.RequestID) {
		t.Fatalf("dlq show before the fix:\n%s", out)
	}
	if n := g.count(t, "SELECT COUNT(*) FROM orders WHERE item_id = ?", id); n != 0 {
		t.Fatalf("%d orders before the replay", n)
	}

	// The fix, then two replays.
	if _, err := g.db.Exec("DROP TRIGGER ctl_missing_table"); err != nil {
		t.Fatal(err)
	}
	off := strconv.FormatInt(l.Offset, 10)
	out = mustRun(t, g.lookup, "dlq", "replay", off)
	if !strings.Contains(out, "undecided before") {
		t.Errorf("first replay: %s", out)
	}
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		return g.count(t, "SELECT COUNT(*) FROM request_outcomes WHERE request_id = ? AND outcome = 'ORDERED'", acc.RequestID) == 1
	}, "the replay was not ordered")
	out = mustRun(t, g.lookup, "dlq", "replay", off)
	if !strings.Contains(out, "already ORDERED") {
		t.Errorf("second replay: %s", out)
	}
	// Both replays consumed (the group's lag over the orders topic is 0).
	testenv.WaitDrained(t, 30*time.Second, g.brokers, g.group, g.topic, "the replays were not consumed")
	if n := g.count(t, "SELECT COUNT(*) FROM orders WHERE item_id = ?", id); n != 1 {
		t.Errorf("%d order rows, want 1", n)
	}
	if n := g.count(t, "SELECT COUNT(*) FROM request_outcomes WHERE item_id = ?", id); n != 1 {
		t.Errorf("%d decisions, want 1", n)
	}
	var dlqAfter api.DeadLetterPage
	_ = json.Unmarshal([]byte(mustRun(t, g.lookup, "dlq", "list", "-o", "json")), &dlqAfter)
	if len(dlqAfter.Letters) != 1 {
		t.Errorf("%d letters after the replays, want still 1 (nothing dead-lettered again)", len(dlqAfter.Letters))
	}
	testenv.Eventually(t, 10*time.Second, 200*time.Millisecond, func() bool {
		code, _, _ := run(t, g.lookup, "audit", sid)
		return code == ExitOK
	}, "the audit is not ok")
	out = mustRun(t, g.lookup, "audit", sid)
	if !strings.Contains(out, "unpaid 1") || !strings.Contains(out, "redis 4, mysql 4") {
		t.Errorf("audit after the replays:\n%s", out)
	}
}
