package draw

import (
	"fmt"
	"testing"
)

// TestNodeWouldPassWithoutItsPrefix is the other half of
// TestInteriorNodeIsNotATicket: it shows that attack is real in the raw tree
// (a pair's node with the leaf's path minus its first hash does lead to the
// root), so what stops it there is that an Entry is always hashed as a leaf.
func TestNodeWouldPassWithoutItsPrefix(t *testing.T) {
	for _, n := range []int{2, 4, 8, 16, 32} {
		entries := make([]Entry, n)
		for i := range n {
			entries[i] = Entry{Ticket: Hash(fmt.Sprint(i)), Arrival: int64(i + 1)}
		}
		l, err := leaves(entries)
		if err != nil {
			t.Fatal(err)
		}
		root := treeRoot(l)
		for j := range n / 2 {
			node := nodeHash(l[2*j], l[2*j+1])
			path := treePath(2*j, l)
			got, ok := rootFromPath(node, j, n/2, path[1:])
			if !ok || got != root {
				t.Fatalf("n=%d node %d: the raw path does not reach the root, so the public test proves nothing", n, j)
			}
		}
	}
}

// TestPrefixesSeparateLeafFromNode: the leaf and node hashes start with
// different bytes, so equal inputs never give equal hashes across kinds.
func TestPrefixesSeparateLeafFromNode(t *testing.T) {
	if leafPrefix == nodePrefix {
		t.Fatal("leaf and node share a prefix")
	}
	e := Entry{Ticket: Hash("x"), Arrival: 1}
	leaf, err := leafHash(e)
	if err != nil {
		t.Fatal(err)
	}
	if nodeHash(leaf, leaf) == leaf {
		t.Fatal("a node equals its leaf")
	}
}
