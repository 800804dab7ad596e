// Package grant signs and checks admission grants: the short-lived proof a
// queued item's POST /api/v1/orders requires that the gate has admitted the
// buyer's ticket (pkg/gate moves the serving position; the ingress hands a
// grant to a ticket whose position the serving position has passed).
//
// A grant is "g1.<item>.<user>.<expires unix ms>.<mac>", the mac being
// HMAC-SHA256 under the item's grant key (item_queues.grant_key, drawn
// from crypto/rand with the queue and never shown) of everything before it,
// in unpadded base64url. Any replica that can read the key checks a grant
// with no shared state and no Redis round trip, which keeps the queue off
// the order's hot path. Binding the item and the user in the mac is what
// makes a grant useless to another buyer or for another item, and the
// expiry what makes a copied or hoarded grant die soon. Reuse by its own
// buyer is harmless: admission already allows one order per buyer per item.
//
// An offer grant ("w1.…", SignOffer) is the same under another version: it
// says the buyer holds a waitlist offer (pkg/stock waitlist.go) and expires
// with the offer's claim window. The version is inside the mac, so neither
// kind can be turned into the other; IsOffer tells a verified grant's kind.
//
// It owns the grant format and its check, and no state: the key is the
// caller's (pkg/store reads item_queues.grant_key).
//
// Only pkg/httpapi imports it: the ingress both hands grants out and checks
// them. It imports nothing but the standard library, never a store client,
// which is what lets a grant be checked with no store call.
package grant
