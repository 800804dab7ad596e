package stacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/internal/inproc"
	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/admission"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

const secret = "trace-test-secret-0123456789abcdef"

// The caller's span: what a front end that traces would send.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// spans is what the recorder has ended, by name.
func spans(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// One trace from click to row, on the real stack with the deployables'
// code (pkg/httpapi behind a real listener, the ingress's orderlog.Publisher,
// a real orderwriter consumer, a real reaper): one POST /api/v1/orders
// with a traceparent is a server span that is the caller's child; the
// Redis admission and the Kafka publish are its children; the consumer's
// batch span links to the publish span the message carried, and the
// item's MySQL transaction is the batch's child and ordered the request;
// when the payment window ends, a reaper pass cancels the order in a
// reaper.cancel span. No span carries the bearer token.
func TestOneTraceFromClickToRow(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracing.Use(tp)
	t.Cleanup(func() { tracing.Use(nil); _ = tp.Shutdown(context.Background()) })

	stk := inproc.New(t)
	db, log := stk.DB, testenv.LogTail(t)
	in := inproc.Settings(secret)
	// The ingress's own publish path (ingress/main.go): a Publisher over
	// the durable writer.
	pub := (*orderlog.Security)(nil).NewPublisher(stk.Brokers, stk.Topic, in.PublishTimeout, orderlog.DefaultBatching())
	t.Cleanup(func() { _ = pub.Close() }) // after the ingress (cleanups run last first)
	hs := stk.Ingress(t, in, inproc.Options{Publisher: pub, Log: log})
	st := hs.Stock

	const window = 2 * time.Second // the payment window, so the reaper has work soon
	stk.Consumer(t, orderwriter.Config{PaymentWindow: window, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		LagInterval: 500 * time.Millisecond}, st, nil, log)

	do := func(method, path, token, body string, hdr map[string]string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.Bytes()
	}
	sign := func(user int64, role string) string {
		tok, err := auth.Sign(secret, user, role, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	item := testenv.ItemID()
	body := fmt.Sprintf(`{"name":"traced","price_cents":999,"stock":5,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"buckets":1}`,
		time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if code, b := do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", item), sign(1, "admin"), body, nil); code != http.StatusOK {
		t.Fatalf("put item: %d %s", code, b)
	}

	buyer := sign(42, "")
	code, b := do(http.MethodPost, "/api/v1/orders", buyer, fmt.Sprintf(`{"item_id":%d,"qty":1}`, item),
		map[string]string{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
	var acc struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(b, &acc); code != http.StatusAccepted || err != nil || acc.RequestID == "" {
		t.Fatalf("order: %d %s", code, b)
	}
	testenv.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		var n int
		_ = db.QueryRow("SELECT COUNT(*) FROM orders WHERE request_id = ?", acc.RequestID).Scan(&n)
		return n == 1
	}, "the order row was not written")
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
		for _, s := range spans(rec, orderwriter.SpanItemTx) {
			if attr(s, "flashsale.ordered") == "1" {
				return true
			}
		}
		return false
	}, "no ended %s span ordered the request", orderwriter.SpanItemTx)

	// The ingress: a child of the caller, by route template.
	var post sdktrace.ReadOnlySpan
	for _, s := range spans(rec, "POST /api/v1/orders") {
		if s.SpanContext().TraceID().String() == callerTrace {
			post = s
		}
	}
	if post == nil {
		t.Fatalf("no POST /api/v1/orders span in the caller's trace; ended: %v", names(rec))
	}
	if post.Parent().SpanID().String() != callerSpan || post.SpanKind() != trace.SpanKindServer || attr(post, "http.response.status_code") != "202" {
		t.Fatalf("POST span: parent %v kind %v status %q", post.Parent().SpanID(), post.SpanKind(), attr(post, "http.response.status_code"))
	}
	child := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		for _, s := range spans(rec, name) {
			if s.Parent().SpanID() == post.SpanContext().SpanID() {
				return s
			}
		}
		t.Fatalf("no %s span under the POST span; ended: %v", name, names(rec))
		return nil
	}
	if r := child(admission.SpanReserve); attr(r, "flashsale.verdict") != string(stock.Admitted) {
		t.Fatalf("reserve span verdict %q", attr(r, "flashsale.verdict"))
	}
	publish := child(admission.SpanPublish)
	if publish.SpanKind() != trace.SpanKindProducer || attr(publish, "flashsale.request_id") != acc.RequestID {
		t.Fatalf("publish span: kind %v request %q", publish.SpanKind(), attr(publish, "flashsale.request_id"))
	}

	// The consumer: a batch root linking to the publish span, its item
	// transaction a child. The batch span ends after its item transaction
	// (a parent outlives its child), so it is waited for on its own: the
	// item span seen above does not mean the batch span has ended.
	var batch sdktrace.ReadOnlySpan
	linksPublish := func() bool {
		for _, s := range spans(rec, orderwriter.SpanBatch) {
			for _, l := range s.Links() {
				if l.SpanContext.TraceID() == publish.SpanContext().TraceID() && l.SpanContext.SpanID() == publish.SpanContext().SpanID() {
					batch = s
					return true
				}
			}
		}
		return false
	}
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, linksPublish,
		"no ended %s span links to the publish span %v", orderwriter.SpanBatch, publish.SpanContext().SpanID())
	if batch.Parent().IsValid() || batch.SpanContext().TraceID() == publish.SpanContext().TraceID() {
		t.Fatalf("batch span is not a root of its own: parent %v", batch.Parent())
	}
	var tx sdktrace.ReadOnlySpan
	for _, s := range spans(rec, orderwriter.SpanItemTx) {
		if s.Parent().SpanID() == batch.SpanContext().SpanID() && attr(s, "flashsale.ordered") == "1" {
			tx = s
		}
	}
	if tx == nil || attr(tx, "flashsale.item_id") != fmt.Sprint(item) {
		t.Fatalf("no %s span of item %d under the batch", orderwriter.SpanItemTx, item)
	}

	// The reaper: after the payment window, a pass cancels the order.
	r := reap.New(reap.Config{Interval: time.Second, StoreTimeout: 2 * time.Second, OrphanGrace: time.Minute}, reap.Deps{DB: db, Stock: st},
		reap.NewMetrics(prometheus.NewRegistry()), log)
	testenv.Eventually(t, 30*time.Second, 250*time.Millisecond, func() bool {
		if !r.RunPass(context.Background()) {
			return false
		}
		var status string
		_ = db.QueryRow("SELECT status FROM orders WHERE request_id = ?", acc.RequestID).Scan(&status)
		return status == "CANCELLED"
	}, "the reaper did not cancel the unpaid order")
	var cancelSpan sdktrace.ReadOnlySpan
	for _, s := range spans(rec, reap.SpanCancel) {
		if attr(s, "flashsale.cancelled") == "1" {
			cancelSpan = s
		}
	}
	if cancelSpan == nil {
		t.Fatalf("no %s span cancelled the order; ended: %v", reap.SpanCancel, names(rec))
	}
	var step, pass sdktrace.ReadOnlySpan
	for _, s := range spans(rec, reap.SpanStep) {
		if s.SpanContext().SpanID() == cancelSpan.Parent().SpanID() {
			step = s
		}
	}
	if step == nil || attr(step, "flashsale.step") != "cancel expired" {
		t.Fatalf("the cancel's parent is not the pass's cancel step")
	}
	for _, s := range spans(rec, reap.SpanPass) {
		if s.SpanContext().SpanID() == step.Parent().SpanID() && !s.Parent().IsValid() {
			pass = s
		}
	}
	if pass == nil {
		t.Fatal("the cancel step is not the child of a root reaper.pass span")
	}

	for _, s := range rec.Ended() {
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.Emit(), buyer) || strings.Contains(a.Value.Emit(), "Bearer") {
				t.Errorf("span %s attribute %s carries the token", s.Name(), a.Key)
			}
		}
	}
}

func names(rec *tracetest.SpanRecorder) []string {
	var out []string
	for _, s := range rec.Ended() {
		out = append(out, s.Name())
	}
	return out
}
