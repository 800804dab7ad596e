package stock

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// The holder bitmap is a one-sided summary of an item's buyer marks: a bit
// per hash of a user id, set by every admission and by warm, cleared only
// when warm rebuilds the item. A clear bit proves the user never held the
// item since the last warm, so a keyed request of theirs cannot be the
// replay of an admission and may be answered "sold out" from memory; a set
// bit may be another user's (about 5% of users at 200,000 holders), and
// that request simply goes to Redis.
//
// It exists for the sold-out flag: one GET of at most 512 KiB per replica
// per flag period, instead of SMEMBERS of the whole buyer set.
const holderBitsLog2 = 22

// HolderBit is the bitmap offset of userID: the top bits of MurmurHash3's
// 64-bit finalizer, which spreads consecutive ids evenly (user ids usually
// are consecutive; FNV's low bits cluster on them).
func HolderBit(userID int64) int64 {
	x := uint64(userID)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return int64(x >> (64 - holderBitsLog2))
}

// HolderBitmap is a snapshot of an item's holder bitmap.
type HolderBitmap []byte

// MayHold reports whether userID may hold the item: false is certain.
func (b HolderBitmap) MayHold(userID int64) bool {
	off := HolderBit(userID)
	i := off >> 3
	if i >= int64(len(b)) {
		return false
	}
	return b[i]&(0x80>>(off&7)) != 0
}

// HolderBits reads the item's holder bitmap (Redis numbers bits from the
// most significant bit of the first byte, as MayHold does): the union of its
// n buckets' bitmaps, one GET per bucket in one pipeline.
func (s *Store) HolderBits(ctx context.Context, itemID int64, n int) (HolderBitmap, error) {
	cmds := make([]*redis.StringCmd, max(n, 1))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range cmds {
			cmds[b] = p.Get(ctx, BucketKeys(itemID, b).HolderBits)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("stock: holder bits", err)
	}
	var out HolderBitmap
	for _, c := range cmds {
		b, err := c.Bytes()
		if err != nil {
			continue // redis.Nil: no holder in this bucket
		}
		if len(b) > len(out) {
			out = append(out, make(HolderBitmap, len(b)-len(out))...)
		}
		for i, x := range b {
			out[i] |= x
		}
	}
	if out == nil {
		out = HolderBitmap{}
	}
	return out, nil
}
