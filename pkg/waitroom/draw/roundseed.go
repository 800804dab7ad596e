package draw

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// roundSeedLabel starts every round-seed message, so that no other HMAC the
// server seed keys can be mistaken for one.
const roundSeedLabel = "flashsale/round-seed/v1"

// RoundSeed is the seed that orders round r of item:
//
//	HMAC-SHA256(key = seed (32 bytes), msg = "flashsale/round-seed/v1"
//	    || item (8 bytes BE) || r.N (4 bytes BE) || r.First (8 bytes BE)
//	    || r.Last (8 bytes BE) || r.Root (32 bytes)
//	    || len(beacon) (2 bytes BE) || beacon)
//
// Keying it by the server seed keeps it unknown to anyone without that seed;
// binding the root makes it unknown to everyone, the server included, until
// the round's tickets are fixed; binding a beacon published after the close
// makes it unknown even to the holder of the server seed until then. A
// ticket's rank in the round is Rank(RoundSeed(...), hash). A malformed root
// or beacon, or a round number outside 0..2^32-1, is ErrRounds. r.Seed is
// not read.
func RoundSeed(seed Seed, item int64, r Round) (Seed, error) {
	msg, err := roundSeedMessage(item, r)
	if err != nil {
		return Seed{}, err
	}
	m := hmac.New(sha256.New, seed[:])
	m.Write(msg)
	var out Seed
	copy(out[:], m.Sum(nil))
	return out, nil
}

func roundSeedMessage(item int64, r Round) ([]byte, error) {
	if r.N < 0 || int64(r.N) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: round number %d", ErrRounds, r.N)
	}
	root, err := decodeHash(r.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: round %d root: %w", ErrRounds, r.N, err)
	}
	beacon, err := decodeBeacon(r.Beacon)
	if err != nil {
		return nil, fmt.Errorf("%w: round %d: %w", ErrRounds, r.N, err)
	}
	msg := make([]byte, 0, len(roundSeedLabel)+8+4+8+8+32+2+len(beacon))
	msg = append(msg, roundSeedLabel...)
	msg = binary.BigEndian.AppendUint64(msg, uint64(item))
	msg = binary.BigEndian.AppendUint32(msg, uint32(r.N))
	msg = binary.BigEndian.AppendUint64(msg, uint64(r.First))
	msg = binary.BigEndian.AppendUint64(msg, uint64(r.Last))
	msg = append(msg, root[:]...)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(beacon)))
	return append(msg, beacon...), nil
}
