// Package tally counts the ingress's order answers per item, by outcome, and
// the latency of its 202s, for the live sale console and `flashsalectl sale
// watch` (GET /api/v1/admin/items/{id}/live).
//
// Every replica counts in memory with atomics, so an answer pays a few
// nanoseconds and never waits on anything (the sold-out fast path answers
// from memory and must stay that cheap), and a flusher adds the counts to
// one Redis hash per item (stock.TallyKey, in the item's slot) at most every
// FLASHSALE_TALLY_FLUSH. The hash is the sum over every replica, so a read
// lags the answers by at most one flush interval (plus the flush's own
// round trip). A flush that fails keeps its counts for the next one: an
// outage of Redis delays the tallies, never an answer.
//
// It owns the in-memory counts and the per-item hash they are summed in (named
// by stock.TallyKey). Only pkg/httpapi imports it. It imports only pkg/stock,
// for the key's name, never pkg/store or pkg/admission: the HTTP layer counts
// each answer, so the order path stays unaware of it.
package tally
