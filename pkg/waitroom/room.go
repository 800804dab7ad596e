package waitroom

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/internal/rowcache"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// What the Room answers besides a view: the HTTP layer turns each into its
// status code (ErrNotOpen 409, ErrEnded and ErrSoldOut 410, ErrNotWarmed
// and ErrNoTicket 404, ErrUnavailable 503; the grant refusals 403).
var (
	// ErrNoTicket: no such ticket of the item, or another buyer's (told
	// apart from nobody's only by its owner, so both are "none").
	ErrNoTicket = errors.New("waitroom: no such ticket")
	// ErrUnavailable: Redis or MySQL did not answer within the store
	// timeout; nothing was taken or changed by the call.
	ErrUnavailable = errors.New("waitroom: temporarily unavailable")
	// ErrOfferGone: an offer grant whose offer was claimed already or whose
	// claim window ended.
	ErrOfferGone = errors.New("waitroom: offer gone")
)

// RoomConfig is what the ingress's waiting room is set by.
type RoomConfig struct {
	// StoreTimeout bounds every Redis and MySQL call.
	StoreTimeout time.Duration
	// GrantTTL is how long an admitted ticket's grant is good
	// (FLASHSALE_QUEUE_GRANT_TTL); 30 s when zero.
	GrantTTL time.Duration
	// WatchEvery is how often the readers behind the long polls read an
	// item's stock, gate and waitlist; 100 ms when zero.
	WatchEvery time.Duration
	// MoveWait is how long a ticket's take waits out a Redis Cluster
	// reshard of the item's slot before answering ErrUnavailable
	// (FLASHSALE_REDIS_MOVE_WAIT); 0: no wait.
	MoveWait time.Duration
}

// Room is the waiting room as the ingress serves it to buyers: tickets
// taken (Take), a ticket's state and its long poll (Status), the grants an
// admitted ticket or a waitlist offer is handed and an order is checked
// with (Grant, CheckGrant). The HTTP layer adapts requests to it and holds
// none of its rules.
//
// One Room serves one ingress replica. Its caches (tickets, grant keys, the
// drawn order) and its readers (one per item with polls waiting) are this
// replica's: nothing in them is a source of truth, each is read again from
// Redis or MySQL when missing or stale.
type Room struct {
	cfg       RoomConfig
	st        *stock.Store
	wr        *Store
	db        store.Querier
	positions *Positions
	tickets   *ticketCache
	items     *rowcache.Cache[Item] // the items' views (item.go)
	grants    *grantKeys
	receipts  receiptKeys
	reads     *itemReads  // ticket reads' shared reads of an item's stock and gate
	admits    *admitWatch // waiting polls' fan-out of sell-outs and admissions
	offers    *offerWatch // sold-out polls' fan-out of waitlist offers and stock again
	m         *RoomMetrics
	log       *slog.Logger
	done      chan struct{} // closed by Stop: every poll answers now
	stop      sync.Once

	// now is the clock grants are signed and checked by (time.Now); a
	// test steps it past a grant's expiry (WithGrantClock).
	now func() time.Time
}

// NewRoom builds the ingress's waiting room over the ledger's store st and
// the database db, counting on m (NewRoomMetrics).
func NewRoom(cfg RoomConfig, st *stock.Store, db store.Querier, m *RoomMetrics, log *slog.Logger) *Room {
	if cfg.GrantTTL <= 0 {
		cfg.GrantTTL = 30 * time.Second
	}
	if cfg.WatchEvery <= 0 {
		cfg.WatchEvery = 100 * time.Millisecond
	}
	wr := NewStore(st)
	positions := NewPositions(db, wr, cfg.StoreTimeout)
	return &Room{
		cfg: cfg, st: st, wr: wr, db: db, log: log,
		positions: positions,
		tickets:   newTicketCache(),
		items:     newItemViews(),
		grants:    newGrantKeys(),
		reads:     newItemReads(),
		admits:    newAdmitWatch(st, wr, cfg.WatchEvery, cfg.StoreTimeout, newAdmitRates(positions.Bound)),
		offers:    newOfferWatch(st, wr, cfg.WatchEvery, cfg.StoreTimeout),
		m:         m,
		done:      make(chan struct{}),
		now:       time.Now,
	}
}

// Stop makes every ticket poll waiting now answer at once, with the state
// it has, and every later one answer without waiting: give it to the HTTP
// server's shutdown.
func (r *Room) Stop() { r.stop.Do(func() { close(r.done) }) }

// WithGrantClock makes r sign and check grants by now instead of
// time.Now, so a test moves past a grant's expiry instead of waiting it
// out. Call it before r serves.
func (r *Room) WithGrantClock(now func() time.Time) { r.now = now }

// Waiting is how many long polls of item wait on this replica: on the gate
// or the sell-out (admit), on a waitlist offer (offer); offerRead says the
// offer reader has read once, so a change from now on wakes its polls.
func (r *Room) Waiting(item int64) (admit, offer int, offerRead bool) {
	r.admits.mu.Lock()
	if wi := r.admits.items[item]; wi != nil {
		admit = wi.refs
	}
	r.admits.mu.Unlock()
	r.offers.mu.Lock()
	oi := r.offers.items[item]
	if oi != nil {
		offer = oi.refs
	}
	r.offers.mu.Unlock()
	if oi != nil {
		_, _, _, offerRead, _ = oi.now(0)
	}
	return admit, offer, offerRead
}
