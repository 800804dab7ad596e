// Package waitroom is the waiting room of a queued item (issue 25): the
// gate that admits tickets at the item's queue_rate, the waitlist's offers
// of released units down the line, and the admission grants an admitted
// ticket (or an offer) is handed. The fair order itself, as pure functions
// an outside verifier can run, is its subpackage draw.
//
// # The gate
//
// For every item with a queue whose sale has started, the gate (gate.go)
// moves the item's serving position on at the item's queue_rate, so tickets
// are admitted in the serving order (ServingLine, draw.LineRounds) at a pace the pipeline can
// take, not all at once. It runs in the reaper. One replica holds it at a
// time, by a Redis lease (pkg/lease, GateLeaseKey) renewed each pass; the
// others wait and take over within the lease's TTL when the holder dies.
// Correctness does not rest on the lease: each move is one script
// (lua/gate_advance.lua) that admits what the rate allows since the last move by
// Redis' clock, so two movers at once admit at the rate, not twice it. What
// the gate cannot do is sell: an admitted ticket's holder still orders
// through admit.lua, which takes stock and enforces one order per buyer, and
// the ingress checks the grant an admitted ticket is handed.
//
// The lease's value names the holder's deployment (its database, and when
// its schema was first migrated; gate_lease.go): a gate refuses to start
// while another deployment's gate holds the lease on the same Redis, which
// would otherwise leave one deployment's waiting rooms admitting nobody.
//
// With no gate running (every reaper down, or FLASHSALE_QUEUE_GATE_INTERVAL
// 0) nobody new is admitted: the queue fails closed, and the alerts say so
// (FlashsaleQueueNoGateHolder, FlashsaleQueueGateStalled).
//
// # The waitlist's offers
//
// Units the reaper releases while a sale is open and sold out sit in the
// item's pool; each gate pass offers them, one unit per buyer, down the
// serving order (gate_offers.go). The offer's script decides everything in
// Redis in one step, so a pass that dies half-way cannot offer a unit twice.
//
// A bucketed item's waitlist is one share per bucket, in the bucket's slot
// (stock.Keys.Waitlist, Offers, Claims): a unit waits in the pool of the
// bucket it was released in, and an offer lives in its buyer's home bucket,
// where admit.lua claims it beside the buyer mark. The gate serves the
// item's one line (gate_offers_buckets.go): it chooses the next buyers in
// line who hold nothing, as many as the pools hold units, moves units to
// the buckets of those whose pool is short through its PoolMover
// (pkg/rebalance's waitlist transfers, idempotent and crash-safe across the
// two slots and MySQL; the reaper's main wires it, so this package does not
// import pkg/rebalance), and offers in each bucket with the same script.
// Each share counts what moved in and out, so it balances on its own (I9).
//
// # Grants
//
// A grant (grant.go) is "g1.<item>.<user>.<expires unix ms>.<mac>", the mac
// being HMAC-SHA256 under the item's grant key (item_queues.grant_key, drawn
// from crypto/rand with the queue and never shown) of everything before it,
// in unpadded base64url. Any replica that can read the key checks a grant
// with no shared state and no Redis round trip, which keeps the queue off
// the order's hot path. Binding the item and the user in the mac is what
// makes a grant useless to another buyer or for another item, and the
// expiry what makes a copied or hoarded grant die soon. Reuse by its own
// buyer is harmless: admission already allows one order per buyer per item.
// An offer grant ("w1.…", SignOfferGrant) is the same under another version:
// it says the buyer holds a waitlist offer and expires with the offer's
// claim window. The version is inside the mac, so neither kind can be turned
// into the other; IsOfferGrant tells a verified grant's kind.
//
// # What it owns
//
// The gate's pass and lease name, the grant format and its check, and the
// metrics flashsale_queue_waiting, flashsale_queue_admitted_total,
// flashsale_queue_gate_held, flashsale_queue_gate_held_back_total,
// flashsale_queue_gate_pass_failures_total and
// flashsale_queue_waitlist_units_total; the Redis state of tickets, the
// gate and the waitlist (Store: tickets.go, gate_redis.go, waitlist.go) and
// their scripts (lua/ticket_take.lua, gate_advance.lua, waitlist_offer.lua,
// waitlist_read.lua, waitlist_line.lua). The keys' names are pkg/stock's
// (QueueKeysOf, and Keys.Waitlist for a bucket's share): the ledger's
// admit.lua, release.lua and restore.lua touch the waitlist's keys in the
// same step as the stock, and pkg/rebalance's waitlist transfers move units
// between two buckets' pools.
// The serving line is drawn in one place, ServingLine (line.go): the gate
// offers released units down it and Positions (the ingress's ticket
// positions, drawn once a second per item) read it; Transcript publishes
// the same order through draw.NewTranscript (TestOneServingLine holds the
// three together); AdmitIn is the wait a ticket's answer estimates.
//
// # The ingress's side: Room
//
// Room (room*.go) is what a buyer meets: the item as the waiting room
// sees it (Item, item.go: read by the Room itself from its own join of the
// item's row and its queue's, cached for a second per replica), taking a
// ticket, reading its state and long-polling it (the readers of watch_admit.go and
// watch_offer.go wake the polls of an item from one Redis read per
// interval: all of them at a sell-out or an offer, those the gate reached
// at its move), the grants an admitted ticket or an offer is handed and
// an order is checked with (grant_keys.go), the transcript and the
// operator's view. Its answers are pkg/api's wire types; the HTTP layer
// only reads the request and maps the refusals (ErrNotOpen, ErrNoTicket,
// ErrNoItem, ErrUnavailable, ...) to status codes. Its metrics are
// flashsale_queue_tickets_total, flashsale_queue_grants_refused_total and
// flashsale_queue_offer_claims_total.
//
// # Its rows
//
// The tables item_queues (a queue's settings, seed and grant key:
// queue_sql.go) and queue_rounds (rounds_sql.go) are this package's, with
// their statements, and so is the read of the item's view with its queue
// (item.go: ReadItem for the Room, LiveQueuedItems for the gate). The catalog saves an item's queue in the item's own
// transaction (SaveQueue after store.UpsertItem); store.Item still carries
// the queue's settings, read by pkg/store's join, for the catalog, the
// audit and the admin views.
//
// # Imports
//
// Importers: the reaper's main, which runs the gate (and hands it the
// rebalancer as its PoolMover); pkg/httpapi, which mounts the Room's
// routes; pkg/catalog (SaveQueue), pkg/audit (the waitlist's I9 counts,
// ReadShares) and pkg/service (LoadScripts). It imports draw, pkg/api,
// pkg/lease, pkg/stock, internal/rowcache and pkg/store (the Querier, the
// error classification and the Item SaveQueue is handed; no query of
// pkg/store's is on a ticket's path), and never the HTTP layer,
// pkg/catalog or pkg/rebalance.
// pkg/ctl (flashsalectl) imports draw alone, which links no store client.
package waitroom
