// Package orderstatus is the buyer-visible status of a request, the JSON the
// status endpoint answers, and the cache every writer (consumer, pay, reaper)
// fills after its MySQL commit so polls rarely reach MySQL.
//
// It owns the View and its JSON, and the cache in Redis (Store): each
// request's entry, ranked so it never moves backwards (PutStatus,
// PutStatuses), the pay's in-doubt marker (MarkInDoubt), the status poll's
// one-call read of the entry and the request's reservation (LookupRequest),
// and the item's status channel on which every stored status is announced
// to the long polls (SubscribeStatuses). Its scripts are under lua/, one
// file per operation (status_put.lua, status_mark.lua, lookup.lua), loaded
// at start-up by pkg/service (LoadScripts); they run on the ledger's path
// (stock.Store.Eval, stock.RunBatch). The keys' names are pkg/stock's
// (Keys.Status, Keys.StatusChannel), with every other key of a bucket and
// its hash tag; the reservations hash its scripts read is the ledger's. A
// miss is read from MySQL through pkg/store.
//
// It also answers the status polls themselves (Reader, reader.go): the one
// Redis call, the MySQL fallback shared by the concurrent polls of a request
// with "no such request" remembered for a second (request_cache.go), the
// owner check, and the long polls' wait (await.go), which fans one status
// subscription per item out to its waiting polls (waits.go) and exports
// flashsale_status_waiting_polls and flashsale_status_subscriptions. The
// ingress's status routes are adapters over it.
//
// Importers: the writers of a status, pkg/admission (a failed publish),
// pkg/orderwriter, pkg/reap and pkg/httpapi (pay, the status routes and
// their long polls), and pkg/service (LoadScripts). It imports pkg/stock,
// pkg/store, pkg/reqid and internal/negcache, never the HTTP layer or a
// writer, so every writer fills the cache with the same View; pkg/stock
// never imports it.
package orderstatus
