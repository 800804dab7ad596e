package ctl

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/histquantile"
)

// Live is one read of GET /api/v1/admin/items/{id}/live (its contract:
// cumulative answer counts and 202 latency histogram summed over every
// ingress replica; parts that could not be read are null and named in
// unavailable).
type Live struct {
	At              time.Time        `json:"at"`
	Item            *Item            `json:"item"` // nil when MySQL could not be read
	Audit           *api.AuditReport `json:"audit"`
	Answers         map[string]int64 `json:"answers"`
	AcceptedLatency struct {
		Count   int64   `json:"count"`
		Sum     float64 `json:"sum_seconds"`
		Buckets []struct {
			LE    float64 `json:"le"`
			Count int64   `json:"count"`
		} `json:"buckets"`
	} `json:"accepted_latency"`
	ConsumerLag *int64   `json:"consumer_lag"`
	DLQMessages *int64   `json:"dlq_messages"`
	Unavailable []string `json:"unavailable"`
}

// View is what one frame of sale watch shows: the latest read, and the
// rates and latency quantiles of the interval since the previous one (nil
// on the first frame, and a quantile nil when no 202 came in the interval).
type View struct {
	Cur      *Live              `json:"live"`
	Interval float64            `json:"interval_seconds"`
	Rates    map[string]float64 `json:"answers_per_second,omitempty"`
	P50      *Quantile          `json:"accepted_p50,omitempty"`
	P99      *Quantile          `json:"accepted_p99,omitempty"`
}

// Quantile is one latency quantile of the interval. Above: it fell past the
// highest bucket, so Seconds is that bound and the real value is beyond it.
type Quantile struct {
	Seconds float64 `json:"seconds"`
	Above   bool    `json:"above_highest_bound,omitempty"`
}

// Compute derives a frame from two reads (prev nil for the first). A count
// that went down (a counter reset: the tally was cleared) counts from zero.
func Compute(prev, cur *Live) View {
	v := View{Cur: cur}
	if prev == nil {
		return v
	}
	dt := cur.At.Sub(prev.At).Seconds()
	if dt <= 0 {
		return v
	}
	v.Interval = dt
	v.Rates = map[string]float64{}
	for k, n := range cur.Answers {
		d := n - prev.Answers[k]
		if d < 0 {
			d = n
		}
		v.Rates[k] = float64(d) / dt
	}
	// The interval's histogram: cumulative counts per bound, differenced.
	prevAt := map[float64]int64{}
	for _, b := range prev.AcceptedLatency.Buckets {
		prevAt[b.LE] = b.Count
	}
	reset := cur.AcceptedLatency.Count < prev.AcceptedLatency.Count
	var les []float64
	var cum []int64
	for _, b := range cur.AcceptedLatency.Buckets {
		d := b.Count - prevAt[b.LE]
		if reset {
			d = b.Count
		}
		les, cum = append(les, b.LE), append(cum, d)
	}
	total := cur.AcceptedLatency.Count - prev.AcceptedLatency.Count
	if reset {
		total = cur.AcceptedLatency.Count
	}
	v.P50, v.P99 = latency(0.5, les, cum, total), latency(0.99, les, cum, total)
	return v
}

// latency is the q-quantile of the interval's buckets (pkg/histquantile, as
// histogram_quantile computes it), nil when no 202 came in it.
func latency(q float64, les []float64, cum []int64, total int64) *Quantile {
	v, above, ok := histquantile.FromBuckets(q, les, cum, total)
	if !ok {
		return nil
	}
	return &Quantile{Seconds: v, Above: above}
}

func optInt(p *int64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatInt(*p, 10)
}

func seconds(p *Quantile) string {
	switch {
	case p == nil:
		return "-"
	case p.Above:
		return fmt.Sprintf("> %.2f s", p.Seconds)
	case p.Seconds < 1:
		return fmt.Sprintf("%.1f ms", p.Seconds*1000)
	}
	return fmt.Sprintf("%.2f s", p.Seconds)
}

// Render writes one frame as text.
func Render(w io.Writer, v View) error {
	l := v.Cur
	var b strings.Builder
	if it := l.Item; it != nil {
		fmt.Fprintf(&b, "item %d %q  %s  (%s)\n", it.ID, it.Name, it.State, l.At.UTC().Format("15:04:05.000Z"))
		redis := "?"
		if it.RedisStock != nil {
			redis = strconv.FormatInt(*it.RedisStock, 10)
		}
		fmt.Fprintf(&b, "stock      redis %s  mysql %d  of %d\n", redis, it.Stock, it.TotalStock)
	} else {
		fmt.Fprintf(&b, "item unavailable  (%s)\n", l.At.UTC().Format("15:04:05.000Z"))
	}
	if l.Audit != nil {
		a := l.Audit
		fmt.Fprintf(&b, "pending    %d reservations (%d units)\n", a.Pending, a.PendingQty)
		fmt.Fprintf(&b, "orders     unpaid %d  paid %d  cancelled %d  rejected %d\n", a.Unpaid, a.Paid, a.Cancelled, a.Rejected)
		for _, bk := range a.PerBucket {
			fmt.Fprintf(&b, "  bucket %-3d redis %d  mysql %d  pending %d\n", bk.Bucket, bk.RedisStock, bk.DBStock, bk.Pending)
		}
		fmt.Fprintf(&b, "audit      %s", verdict(a.OK))
		if len(a.Violations) > 0 {
			fmt.Fprintf(&b, ": %s", strings.Join(a.Violations, "; "))
		}
		b.WriteByte('\n')
	} else {
		b.WriteString("audit      unavailable\n")
	}
	fmt.Fprintf(&b, "queue      consumer lag %s  dlq %s\n", optInt(l.ConsumerLag), optInt(l.DLQMessages))
	fmt.Fprintf(&b, "202        p50 %s  p99 %s\n", seconds(v.P50), seconds(v.P99))
	keys := make([]string, 0, len(l.Answers))
	for k := range l.Answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("answers    total      per second\n")
	for _, k := range keys {
		rate := "-"
		if v.Rates != nil {
			rate = fmt.Sprintf("%.1f", v.Rates[k])
		}
		fmt.Fprintf(&b, "  %-18s %-10d %s\n", k, l.Answers[k], rate)
	}
	if len(l.Unavailable) > 0 {
		fmt.Fprintf(&b, "unavailable: %s\n", strings.Join(l.Unavailable, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
