package draw

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// A round's tickets are committed by a Merkle tree over (hash, arrival), built
// as RFC 6962 §2.1 builds a log's tree (the same as RFC 9162 §2.1.1):
//
//	leaf  = SHA-256(0x00 || hash (32 bytes) || arrival (8 bytes, big-endian))
//	node  = SHA-256(0x01 || left || right)
//	MTH({})    = SHA-256("")
//	MTH({d})   = leaf(d)
//	MTH(D[n])  = node(MTH(D[0:k]), MTH(D[k:n])), k the largest power of two < n
//
// with the leaves in ascending arrival order. The root is published when the
// round closes, before its order can be computed: it fixes which tickets the
// round holds, and each buyer can check their own ticket is among them with a
// proof of log2(n) hashes. The two prefixes keep a leaf from passing as an
// interior node and the other way round.
const (
	leafPrefix = 0x00
	nodePrefix = 0x01
)

// leafHash is the tree's leaf for e.
func leafHash(e Entry) ([32]byte, error) {
	h, err := decodeHash(e.Ticket)
	if err != nil {
		return [32]byte{}, err
	}
	var b [1 + 32 + 8]byte
	b[0] = leafPrefix
	copy(b[1:33], h[:])
	binary.BigEndian.PutUint64(b[33:], uint64(e.Arrival))
	return sha256.Sum256(b[:]), nil
}

// nodeHash is the interior node over left and right.
func nodeHash(left, right [32]byte) [32]byte {
	var b [1 + 32 + 32]byte
	b[0] = nodePrefix
	copy(b[1:33], left[:])
	copy(b[33:], right[:])
	return sha256.Sum256(b[:])
}

// leaves hashes entries, which must be in strictly ascending arrival order:
// the order is part of the commitment, so it is checked, not imposed.
func leaves(entries []Entry) ([][32]byte, error) {
	out := make([][32]byte, len(entries))
	for i, e := range entries {
		if i > 0 && e.Arrival <= entries[i-1].Arrival {
			return nil, fmt.Errorf("%w: leaf %d has arrival %d after %d (want ascending arrivals)",
				ErrArrivals, i, e.Arrival, entries[i-1].Arrival)
		}
		h, err := leafHash(e)
		if err != nil {
			return nil, fmt.Errorf("%w: leaf %d: %w", ErrArrivals, i, err)
		}
		out[i] = h
	}
	return out, nil
}

// split is the largest power of two smaller than n (n >= 2).
func split(n int) int {
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	return k
}

func treeRoot(l [][32]byte) [32]byte {
	switch len(l) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return l[0]
	}
	k := split(len(l))
	return nodeHash(treeRoot(l[:k]), treeRoot(l[k:]))
}

// treePath is RFC 6962's PATH(m, D[n]): the siblings from leaf m up, nearest
// first.
func treePath(m int, l [][32]byte) [][32]byte {
	if len(l) <= 1 {
		return nil
	}
	k := split(len(l))
	if m < k {
		return append(treePath(m, l[:k]), treeRoot(l[k:]))
	}
	return append(treePath(m-k, l[k:]), treeRoot(l[:k]))
}

// MerkleRoot is the root of entries, in hex. The entries are one round's
// tickets in strictly ascending arrival order; a hash that is not 64
// lower-case hex digits, or arrivals out of order, is ErrArrivals.
func MerkleRoot(entries []Entry) (string, error) {
	l, err := leaves(entries)
	if err != nil {
		return "", err
	}
	r := treeRoot(l)
	return hex.EncodeToString(r[:]), nil
}

// InclusionProof is the audit path of entries[index] (RFC 6962 §2.1.1), in
// hex, nearest sibling first: what a buyer needs, with the round's published
// root and size, to check with VerifyInclusion that their ticket is in it.
func InclusionProof(entries []Entry, index int) ([]string, error) {
	if index < 0 || index >= len(entries) {
		return nil, fmt.Errorf("%w: index %d of a tree of %d", ErrProof, index, len(entries))
	}
	l, err := leaves(entries)
	if err != nil {
		return nil, err
	}
	path := treePath(index, l)
	out := make([]string, len(path))
	for i, p := range path {
		out[i] = hex.EncodeToString(p[:])
	}
	return out, nil
}

// VerifyInclusion checks that e is leaf index of the tree of size leaves
// whose root is root, given its audit path (RFC 9162 §2.1.3.2). Every
// failure, a malformed root or proof included, wraps ErrProof.
//
// As in RFC 9162 the root does not commit to the size by itself: a proof for
// leaf i also fits another size whose tree puts i's siblings on the same
// sides. The size must come from where the root does (a round's
// Last-First+1, published with its root and bound into its seed), never
// from the prover.
func VerifyInclusion(root string, e Entry, index, size int, proof []string) error {
	want, err := decodeHash(root)
	if err != nil {
		return fmt.Errorf("%w: root: %w", ErrProof, err)
	}
	leaf, err := leafHash(e)
	if err != nil {
		return fmt.Errorf("%w: ticket: %w", ErrProof, err)
	}
	path := make([][32]byte, len(proof))
	for i, p := range proof {
		if path[i], err = decodeHash(p); err != nil {
			return fmt.Errorf("%w: proof hash %d: %w", ErrProof, i, err)
		}
	}
	got, ok := rootFromPath(leaf, index, size, path)
	if !ok {
		return fmt.Errorf("%w: a proof of %d hashes does not fit leaf %d of %d", ErrProof, len(proof), index, size)
	}
	if got != want {
		return fmt.Errorf("%w: it leads to %x, the root is %s", ErrProof, got, root)
	}
	return nil
}

// rootFromPath is RFC 9162 §2.1.3.2's computation: the root that leaf, at
// index of size, and path lead to; false when the path's length does not fit
// the index and size.
func rootFromPath(leaf [32]byte, index, size int, path [][32]byte) ([32]byte, bool) {
	if index < 0 || index >= size {
		return [32]byte{}, false
	}
	fn, sn := uint64(index), uint64(size-1)
	r := leaf
	for _, p := range path {
		if sn == 0 {
			return [32]byte{}, false
		}
		if fn&1 == 1 || fn == sn {
			r = nodeHash(p, r)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = nodeHash(r, p)
		}
		fn >>= 1
		sn >>= 1
	}
	return r, sn == 0
}
