// Package httpapi is the ingress's HTTP API (Echo v4): authentication, rate
// limits, JSON in and out, and the routes of ingress/openapi.yaml. The work
// behind the routes lives in admission (orders), catalog (admin) and audit.
//
// The work behind them is also in pkg/stockchange (restock and withdraw),
// pkg/orderstatus (order status: its cache, the pay's in-doubt marker, the
// poll's read with its MySQL fallback, and the long polls' wait on the status
// subscription), pkg/dlq (the dead-letter topic's list, show and replay),
// pkg/tally (the live counts), pkg/waitroom (the waiting room: its routes are
// adapters over waitroom.Room), pkg/console (the console page) and pkg/ops
// (the readiness checks and the ops routes). The admin item body's rules
// (catalog.Input) are pkg/catalog's.
//
// It owns what is the HTTP layer's own: the routes and middleware, the per-IP
// rate limit (a one-second counter per client IP in Redis, the keys
// fs:ip:<ip>:<second>, iplimit.go), the in-memory cache of the items buyers
// read (items.go, an internal/rowcache; the waiting room's routes read the
// Room's own view of the item instead),
// and the metrics flashsale_http_requests_total,
// flashsale_http_request_duration_seconds, flashsale_stock_changes_total and
// flashsale_redis_batch_calls. Any other stored state it reaches through the
// packages named above.
//
// Only the ingress's main imports it (other packages' tests run a Server too).
// It is the top of the ingress and may import any package the ingress needs;
// it imports pkg/waitroom, whose Room answers the waiting room's routes and
// checks an order's grant. It never imports pkg/service (the main hands it to
// the runner) nor the workers of the consumer and the reaper (orderwriter,
// reap, rebalance, auditor).
package httpapi
