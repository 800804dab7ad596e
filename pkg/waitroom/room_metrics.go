package waitroom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// RoomMetrics are the ingress side's waiting-room instruments (the gate's
// are GateMetrics, in the reaper).
type RoomMetrics struct {
	// tickets counts tickets by result (new, have); grantsRefused the
	// orders of queued items refused for their grant, by reason;
	// offerClaims the orders accepted on a waitlist offer.
	tickets       *prometheus.CounterVec
	grantsRefused *prometheus.CounterVec
	offerClaims   prometheus.Counter
}

// NewRoomMetrics registers the Room's metrics on reg.
func NewRoomMetrics(reg prometheus.Registerer) *RoomMetrics {
	f := promauto.With(reg)
	return &RoomMetrics{
		tickets: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_queue_tickets_total",
			Help: "Waiting-room tickets handed out by POST /api/v1/items/{id}/queue, by result: new (taken by this call) or have (the buyer's existing ticket).",
		}, []string{"result"}),
		grantsRefused: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_queue_grants_refused_total",
			Help: "Orders of items with a waiting room refused for their admission grant (403), by reason: required (none sent), invalid (forged, another buyer's or item's), expired, offer_gone (a waitlist offer claimed already or lapsed).",
		}, []string{"reason"}),
		offerClaims: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_queue_offer_claims_total",
			Help: "Orders accepted (202) on a waitlist offer: released units of queued items sold again to the next ticket in line.",
		}),
	}
}

// Reasons an order is refused for its grant (flashsale_queue_grants_refused_total).
const (
	RefusedRequired  = "required"   // none sent for a queued item
	RefusedInvalid   = "invalid"    // forged, another buyer's or item's
	RefusedExpired   = "expired"    // past its expiry
	RefusedOfferGone = "offer_gone" // the offer claimed already or lapsed
)

// CountRefusal counts an order refused for its grant; the ledger refuses
// some (no grant for a gated item, an offer already claimed) after
// CheckGrant passed, so the order path counts those.
func (r *Room) CountRefusal(reason string) { r.m.grantsRefused.WithLabelValues(reason).Inc() }

// CountOfferClaim counts an order accepted on a waitlist offer.
func (r *Room) CountOfferClaim() { r.m.offerClaims.Inc() }
