package draw

import (
	"encoding/hex"
	"fmt"
)

// maxBeacon is the longest beacon value a round seed can bind: its length is
// written in two bytes.
const maxBeacon = 1<<16 - 1

// decodeHash reads a sha256 in its one canonical form, 64 lower-case hex
// digits. The rounds scheme compares hashes as strings (in transcripts and
// receipts), so it refuses the other spellings of the same bytes instead of
// letting two strings name one ticket.
func decodeHash(s string) ([32]byte, error) {
	var out [32]byte
	if len(s) != 64 || !lowerHex(s) {
		return out, fmt.Errorf("%q is not 64 lower-case hex digits", s)
	}
	if _, err := hex.Decode(out[:], []byte(s)); err != nil {
		return out, fmt.Errorf("%q: %w", s, err)
	}
	return out, nil
}

// decodeBeacon reads a round's beacon value: lower-case hex of 0 to maxBeacon
// bytes, "" for a round without a beacon.
func decodeBeacon(s string) ([]byte, error) {
	if len(s)%2 != 0 || !lowerHex(s) || len(s)/2 > maxBeacon {
		return nil, fmt.Errorf("beacon %q is not lower-case hex of at most %d bytes", s, maxBeacon)
	}
	return hex.DecodeString(s)
}

func lowerHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
