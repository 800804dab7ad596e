// Package orderstatus is the buyer-visible status of a request, the JSON the
// status endpoint answers, and the cache every writer (consumer, pay, reaper)
// fills after its MySQL commit so polls rarely reach MySQL.
//
// It owns the View and its JSON; the cache entries are the request's status
// key in its bucket's Redis slot (pkg/stock's Keys.Status, written by
// status_put.lua), and a miss is read from MySQL through pkg/store.
//
// Importers: the writers of a status, pkg/admission (a failed publish),
// pkg/orderwriter, pkg/reap and pkg/httpapi (pay and the status routes). It
// imports only pkg/stock and pkg/store, never the HTTP layer or a writer, so
// every writer fills the cache with the same View.
package orderstatus
