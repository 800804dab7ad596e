package draw

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Receipt is what the server signs when it hands out a ticket: the item, the
// ticket's hash, its arrival number and when it was taken (by the server's
// clock). With it a buyer can show anyone holding the deployment's public key
// that the server issued this ticket with this arrival number and this time:
// if the transcript then leaves the ticket out or lists it with another
// arrival, the receipt is evidence a third party can check, not the buyer's
// word. It names the ticket by its hash; the buyer shows it is theirs by the
// id that hashes to it.
type Receipt struct {
	Item   int64  `json:"item_id"`
	Ticket string `json:"ticket"` // Hash(id): 64 lower-case hex digits
	// Arrival is the ticket's arrival number.
	Arrival int64 `json:"arrival"`
	// TakenAt is signed to the millisecond (Unix milliseconds); ParseReceipt
	// returns it in UTC.
	TakenAt time.Time `json:"taken_at"`
}

const (
	// receiptLabel starts the signed message, so the key's signature over a
	// receipt cannot be taken for its signature over anything else.
	receiptLabel = "flashsale/receipt/v1"
	// receiptPrefix starts a receipt's string, naming its format.
	receiptPrefix = "r1"
	// receiptPayloadLen: item (8) || hash (32) || arrival (8) || taken_at_ms (8).
	receiptPayloadLen = 8 + 32 + 8 + 8
)

// receiptEncoding is unpadded base64url that refuses the encodings of a value
// other than its one canonical form, so one receipt has one string.
var receiptEncoding = base64.RawURLEncoding.Strict()

// payload is the receipt's 56 bytes: item (8 bytes BE) || hash (32 bytes) ||
// arrival (8 bytes BE) || taken_at in Unix milliseconds (8 bytes BE, two's
// complement).
func (rc Receipt) payload() ([]byte, error) {
	h, err := decodeHash(rc.Ticket)
	if err != nil {
		return nil, fmt.Errorf("%w: ticket: %w", ErrReceipt, err)
	}
	b := make([]byte, 0, receiptPayloadLen)
	b = binary.BigEndian.AppendUint64(b, uint64(rc.Item))
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(rc.Arrival))
	return binary.BigEndian.AppendUint64(b, uint64(rc.TakenAt.UnixMilli())), nil
}

// signed is the message the signature covers: the label, then the payload.
func signed(payload []byte) []byte {
	return append([]byte(receiptLabel), payload...)
}

// SignReceipt signs rc with the deployment's key and returns its string:
// "r1." || base64url(payload) || "." || base64url(signature), both unpadded,
// where the signature is Ed25519 over "flashsale/receipt/v1" || payload. A
// ticket hash that is not 64 lower-case hex digits is ErrReceipt; a key that
// is not an Ed25519 private key is ErrSignature.
func SignReceipt(priv ed25519.PrivateKey, rc Receipt) (string, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("%w: private key of %d bytes", ErrSignature, len(priv))
	}
	p, err := rc.payload()
	if err != nil {
		return "", err
	}
	sig := ed25519.Sign(priv, signed(p))
	return receiptPrefix + "." + receiptEncoding.EncodeToString(p) + "." + receiptEncoding.EncodeToString(sig), nil
}

// ParseReceipt reads a receipt's string without checking its signature, which
// it returns (64 bytes) for the caller to check. Anything but the exact form
// SignReceipt writes is ErrReceipt.
func ParseReceipt(s string) (Receipt, []byte, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] != receiptPrefix {
		return Receipt{}, nil, fmt.Errorf("%w: want %s.<payload>.<signature>", ErrReceipt, receiptPrefix)
	}
	p, err := receiptEncoding.DecodeString(parts[1])
	if err != nil || len(p) != receiptPayloadLen {
		return Receipt{}, nil, fmt.Errorf("%w: payload is not %d bytes in unpadded base64url", ErrReceipt, receiptPayloadLen)
	}
	sig, err := receiptEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Receipt{}, nil, fmt.Errorf("%w: signature is not %d bytes in unpadded base64url", ErrReceipt, ed25519.SignatureSize)
	}
	return Receipt{
		Item:    int64(binary.BigEndian.Uint64(p[0:8])),
		Ticket:  hex.EncodeToString(p[8:40]),
		Arrival: int64(binary.BigEndian.Uint64(p[40:48])),
		TakenAt: time.UnixMilli(int64(binary.BigEndian.Uint64(p[48:56]))).UTC(),
	}, sig, nil
}

// VerifyReceipt reads a receipt's string and checks its signature under pub:
// ErrReceipt if it is malformed, ErrSignature if the signature does not verify
// (a field or the signature changed, or another key signed it).
func VerifyReceipt(pub ed25519.PublicKey, s string) (Receipt, error) {
	rc, sig, err := ParseReceipt(s)
	if err != nil {
		return Receipt{}, err
	}
	if len(pub) != ed25519.PublicKeySize {
		return Receipt{}, fmt.Errorf("%w: public key of %d bytes", ErrSignature, len(pub))
	}
	p, err := rc.payload()
	if err != nil {
		return Receipt{}, err
	}
	if !ed25519.Verify(pub, signed(p), sig) {
		return Receipt{}, fmt.Errorf("%w: under key %s", ErrSignature, KeyID(pub))
	}
	return rc, nil
}

// KeyID names a receipt key: the first 8 bytes of sha256(public key), in hex.
// It lets a buyer tell which of a deployment's keys (after a rotation) signed
// a receipt; it is a name, not a check: the signature is the check.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}
