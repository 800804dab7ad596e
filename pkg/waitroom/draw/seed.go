package draw

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// Seed is the secret that orders an item's early tickets. It is revealed at
// starts_at; before that only its Commitment is shown.
type Seed [32]byte

// NewSeed draws a seed from r; nil means crypto/rand. Tests pass a
// deterministic source; the server always passes nil.
func NewSeed(r io.Reader) (Seed, error) {
	if r == nil {
		r = rand.Reader
	}
	var s Seed
	if _, err := io.ReadFull(r, s[:]); err != nil {
		return Seed{}, fmt.Errorf("waitroom: seed: %w", err)
	}
	return s, nil
}

// ParseSeed reads a seed in its hex form (String).
func ParseSeed(h string) (Seed, error) {
	var s Seed
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != len(s) {
		return Seed{}, fmt.Errorf("waitroom: seed %q: want %d bytes in hex", h, len(s))
	}
	copy(s[:], b)
	return s, nil
}

// String is the seed in hex.
func (s Seed) String() string { return hex.EncodeToString(s[:]) }

// MarshalText writes the seed in hex, so it is a JSON string.
func (s Seed) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the hex form.
func (s *Seed) UnmarshalText(b []byte) error {
	p, err := ParseSeed(string(b))
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// Commitment is hex(sha256(seed)), published on the item before any ticket is
// taken.
func (s Seed) Commitment() string {
	sum := sha256.Sum256(s[:])
	return hex.EncodeToString(sum[:])
}

// NewTicketID draws a ticket id (16 random bytes in hex) from r; nil means
// crypto/rand. The server draws it, so neither buyer nor operator picks it.
func NewTicketID(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("waitroom: ticket id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Hash is a ticket's public name, hex(sha256(id)): the transcript lists
// hashes, so checking it does not need the ids.
func Hash(ticketID string) string {
	sum := sha256.Sum256([]byte(ticketID))
	return hex.EncodeToString(sum[:])
}

// Rank is the keyed rank of a ticket by its hash: HMAC-SHA256(seed, hash),
// the hash taken as its 32 bytes. A lower rank is served first. A hash that is
// not 64 hex digits is keyed as its text (Verify refuses such a transcript
// before ranking).
func Rank(seed Seed, hash string) [32]byte {
	msg, err := hex.DecodeString(hash)
	if err != nil {
		msg = []byte(hash)
	}
	m := hmac.New(sha256.New, seed[:])
	m.Write(msg)
	var r [32]byte
	copy(r[:], m.Sum(nil))
	return r
}
