// Package scenarios holds the whole-pipeline scenarios of issue 22, seen as
// an acceptance suite sees them: the real ingress, two consumers and a
// reaper (with its rebalancer) run as processes on the local stack, and the
// tests speak HTTP only (they read MySQL only to count orders). The
// three scenarios of issue 22 run on items of 1, 8 and 64 stock buckets
// with a per-user limit of 3 and quantities of 1 to 3:
//
//   - TestFlashSale: many more buyers than units at once, with copies and
//     second orders; every unit sold once, no wrong 410, lone buyers served
//     at once, the audit exact per bucket, MySQL's orders the units sold.
//   - TestIdempotency: 20 copies of one keyed order at once, on a fresh
//     item and right after a burst; replays after the order is written and
//     paid; the key with another body; a holder's new key.
//   - TestPaymentWindow: buyers served at once, half pay, the reaper
//     cancels the rest, their units go home and are bought again.
//
// Three more run beside them: TestRestockLiveSale restocks and withdraws a
// live sale mid-burst (1 and 8 buckets, a limit of 1),
// TestSmallBuyerAtTheEnd serves a buyer of 1 from the last 2 units spread
// over 8 or 64 buckets, and TestOrderWait orders with ?wait= (the 202
// carries the written order's status).
//
// They run in the default `go test ./...` of make test, about 30 s in all
// (most of it building the binaries and the 3 s payment windows).
//
// It has no code outside its tests and nothing imports it. Its tests import
// internal/testenv and, for tokens and bucket homes, pkg/auth and pkg/stock;
// everything else goes over HTTP.
package scenarios
