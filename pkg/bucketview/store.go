package bucketview

import "github.com/flashsale-dev/flashsale/pkg/stock"

// Store reads a bucketed item's buckets over the ledger's Redis client:
// their stock across the rebalancer's transfers (Snapshot), the transfer
// marks (ReadTransferMark) and the want flags (Wants). It writes nothing;
// every key it reads is named by pkg/stock.
type Store struct {
	// st is the ledger, whose Redis client (st.Client()) is asked for at
	// each call: a Store made over a nil stock.Store (a server built
	// without stores, to list its routes) fails only if it is used. Redis
	// failures are wrapped by stock.Unavailable, the one error every caller
	// answers 503 for.
	st *stock.Store
}

// NewStore returns a reader of buckets over the ledger's client and its
// per-bucket stock read.
func NewStore(st *stock.Store) *Store { return &Store{st: st} }
