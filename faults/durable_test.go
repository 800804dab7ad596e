//go:build faults

package faults

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// The publish stall and the durability of 202s, as the cluster faults
// (stack_cluster_test.go) and the network faults (netfaults_test.go) both
// measure them.

// stall is what the burst saw after a fault at `at`: how long publishes
// were refused (from the fault to the first 202 answered to a request sent
// after it: a request sent at once may be retried inside the ingress and
// answered much later) and the answers that arrived in between.
type stall struct {
	took    time.Duration
	answers string
	n503    int
	resumed bool
}

func measureStall(w *workload, at time.Time) stall {
	as := w.answersBetween(at, time.Now().Add(time.Hour))
	sort.Slice(as, func(i, j int) bool { return as[i].doneAt.Before(as[j].doneAt) })
	var s stall
	var before []answer
	for _, a := range as {
		if w.published(a) {
			s.took, s.resumed = a.doneAt.Sub(at), true
			break
		}
		before = append(before, a)
		if a.code == 503 {
			s.n503++
		}
	}
	s.answers = codes(before)
	return s
}

// published reports whether a was the 202 of a request published then: a
// replayed Idempotency-Key is answered the first 202 again without any
// publish, so it says nothing about the brokers.
func (w *workload) published(a answer) bool {
	if a.code != 202 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	first, ok := w.accepted[a.rid]
	return ok && first.sentAt.Equal(a.sentAt)
}

// checkDurable reads the orders topic from the start and fails the test
// for every request answered 202 whose message is not in the log: a 202
// promises the message was written to min.insync replicas, so no broker
// loss may take it away.
func (p *pipeline) checkDurable(ctx context.Context, w *workload) int {
	t := p.t
	t.Helper()
	end, err := p.topicEnd(ctx, p.orders)
	if err != nil {
		t.Fatalf("orders topic end: %v", err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: p.kafka, Topic: p.orders, Partition: 0, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	inLog := map[string]bool{}
	for read := int64(0); read < end; read++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s at %d of %d: %v", p.orders, read, end, err)
		}
		if om, err := orderlog.Decode(m.Value); err == nil {
			inLog[om.RequestID] = true
		}
	}
	_, acc, _, _ := w.snapshot()
	var missing []string
	for _, a := range acc {
		if !inLog[a.rid] {
			missing = append(missing, a.rid)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("I4: %d of %d requests answered 202 have no message in %s (%d messages): %s",
			len(missing), len(acc), p.orders, end, strings.Join(missing[:min(10, len(missing))], ", "))
	}
	return len(inLog)
}
