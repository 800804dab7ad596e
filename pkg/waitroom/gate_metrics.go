package waitroom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the gate's series. Items are not labels: an operator reads
// one item's queue with GET /api/v1/admin/items/{id}/queue (flashsalectl
// queue show).
type GateMetrics struct {
	// Held is 1 while this replica holds the gate.
	Held prometheus.Gauge
	// Admitted counts the positions the gate moved on, over every item.
	Admitted prometheus.Counter
	// Waiting is the tickets beyond the serving position, over the live
	// queued items, as the holder saw them at its last pass (0 elsewhere).
	Waiting prometheus.Gauge
	// PassFailures counts passes that ended with an error.
	PassFailures prometheus.Counter
	// HeldBack counts item passes in which the gate admitted nobody
	// because the pipeline had FLASHSALE_QUEUE_MAX_IN_FLIGHT of the item's
	// orders still to write.
	HeldBack prometheus.Counter
	// Waitlist counts released units by what the waitlist did with them:
	// offered to a ticket, lapsed (an offer's window ended unclaimed),
	// returned (to the stock: nobody left in line, or the sale over) and
	// moved (a bucketed item's, from one bucket's pool to another's for an
	// offer to a buyer of that bucket). The claims are the ingress's
	// (flashsale_queue_offer_claims_total).
	Waitlist *prometheus.CounterVec
}

// NewGateMetrics registers the gate's series on reg.
func NewGateMetrics(reg prometheus.Registerer) *GateMetrics {
	f := promauto.With(reg)
	return &GateMetrics{
		Held: f.NewGauge(prometheus.GaugeOpts{
			Name: "flashsale_queue_gate_held",
			Help: "1 while this reaper replica holds the waiting room's gate (FLASHSALE_QUEUE_GATE_LEASE), else 0.",
		}),
		Admitted: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_queue_admitted_total",
			Help: "Serving positions the waiting room's gate admitted, over every queued item.",
		}),
		Waiting: f.NewGauge(prometheus.GaugeOpts{
			Name: "flashsale_queue_waiting",
			Help: "Tickets beyond the serving position, over the queued items whose sale is open, at the gate holder's last pass (0 on other replicas).",
		}),
		PassFailures: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_queue_gate_pass_failures_total",
			Help: "Passes of the waiting room's gate that ended with an error (logged). The next pass that works makes up at most one second of the time lost at the item's rate (gate_advance.lua), so a longer outage is not made up: admissions resume at the rate, without a burst.",
		}),
		HeldBack: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_queue_gate_held_back_total",
			Help: "Item passes in which the waiting room's gate admitted nobody because FLASHSALE_QUEUE_MAX_IN_FLIGHT of the item's orders were reserved and not yet written to MySQL (the pipeline's headroom used up).",
		}),
		Waitlist: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_queue_waitlist_units_total",
			Help: "Released units of queued items by what the waitlist did: offered to the next ticket in line, lapsed (the claim window ended), returned (to the stock: nobody left in line, or the sale over), moved (a bucketed item's, between two buckets' pools, for an offer to a buyer of the other bucket).",
		}, []string{"event"}),
	}
}
