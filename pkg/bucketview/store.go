package bucketview

import (
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// Store reads a bucketed item's buckets over the ledger's Redis client:
// their stock across the rebalancer's transfers (Snapshot), the transfer
// marks (ReadTransferMark) and the want flags (Wants). It writes nothing;
// every key it reads is named by pkg/stock.
type Store struct {
	st *stock.Store
}

// NewStore returns a reader of buckets over the ledger's client and its
// per-bucket stock read.
func NewStore(st *stock.Store) *Store { return &Store{st: st} }

// client is the ledger's Redis client, asked for at each call: a Store
// made over a nil stock.Store (a server built without stores, to list its
// routes) fails only if it is used.
func (s *Store) client() redis.UniversalClient { return s.st.Client() }

// unavailable wraps a failure to reach Redis in stock.ErrUnavailable, the
// one error every caller answers 503 for.
var unavailable = stock.Unavailable
