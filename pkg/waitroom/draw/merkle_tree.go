package draw

import (
	"encoding/hex"
	"fmt"
)

// Tree is one round's Merkle tree kept whole, for a server that answers
// many inclusion proofs of it: every subtree's hash is computed once
// (NewTree, O(n)), and each Proof is then O(log n) lookups, where
// InclusionProof hashes the whole round again for every proof. Its root
// and proofs are those of MerkleRoot and InclusionProof. Safe for
// concurrent readers once built.
type Tree struct {
	n    int
	hash map[[2]int][32]byte // (start, size) -> the subtree's hash
	root [32]byte
}

// NewTree builds the tree of entries, one round's tickets in strictly
// ascending arrival order (ErrArrivals otherwise).
func NewTree(entries []Entry) (*Tree, error) {
	l, err := leaves(entries)
	if err != nil {
		return nil, err
	}
	t := &Tree{n: len(l), hash: make(map[[2]int][32]byte, 2*len(l))}
	t.root = t.build(l, 0)
	return t, nil
}

// build hashes the subtree of l starting at leaf start, keeping every
// subtree's hash on the way.
func (t *Tree) build(l [][32]byte, start int) [32]byte {
	var h [32]byte
	switch len(l) {
	case 0:
		return treeRoot(nil)
	case 1:
		h = l[0]
	default:
		k := split(len(l))
		h = nodeHash(t.build(l[:k], start), t.build(l[k:], start+k))
	}
	t.hash[[2]int{start, len(l)}] = h
	return h
}

// Size is the number of leaves.
func (t *Tree) Size() int { return t.n }

// Root is the tree's root in hex (MerkleRoot of its entries).
func (t *Tree) Root() string { return hex.EncodeToString(t.root[:]) }

// Proof is leaf index's audit path in hex, nearest sibling first
// (InclusionProof of its entries).
func (t *Tree) Proof(index int) ([]string, error) {
	if index < 0 || index >= t.n {
		return nil, fmt.Errorf("%w: index %d of a tree of %d", ErrProof, index, t.n)
	}
	var path []string
	var walk func(m, start, n int)
	walk = func(m, start, n int) {
		if n <= 1 {
			return
		}
		k := split(n)
		var sib [32]byte
		if m < k {
			walk(m, start, k)
			sib = t.hash[[2]int{start + k, n - k}]
		} else {
			walk(m-k, start+k, n-k)
			sib = t.hash[[2]int{start, k}]
		}
		path = append(path, hex.EncodeToString(sib[:]))
	}
	walk(index, 0, t.n)
	return path, nil
}
