package admission

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// fingerprint names what a keyed request asks, so that an Idempotency-Key
// sent again with another request is refused (KeyReused, 422) instead of
// replaying the first answer: a client that posted qty 1 and then qty 2 with
// one key was told 202 twice and held one unit, believing it held two. This
// is the rule of the HTTP Idempotency-Key draft and of the payment APIs
// that made the header common.
//
// It covers the request's canonical content: the operation (an order, or a
// waitlist claim), the caller, the item and the quantity, each as a decimal
// field. The grant a queued order carries is left out: a buyer retrying with
// a refreshed grant is sending the same request. The key itself is scoped to
// the caller and the item by its Redis key (stock.Keys.Idempotency), so the
// same key on another item is a new request there.
//
// 16 bytes of SHA-256 in hex: stored beside the key's request id, never
// compared with anything but another fingerprint.
func (r Request) fingerprint() string {
	if r.IdempotencyKey == "" {
		return ""
	}
	op := "order"
	if r.Claim {
		op = "claim"
	}
	b := make([]byte, 0, 64)
	b = append(b, "POST /api/v1/orders "...)
	b = append(b, op...)
	b = append(b, 0)
	b = strconv.AppendInt(b, r.UserID, 10)
	b = append(b, 0)
	b = strconv.AppendInt(b, r.ItemID, 10)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(r.Qty), 10)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
