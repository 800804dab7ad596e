package draw

import (
	"fmt"
	"slices"
	"testing"
)

// TestTreeIsMerkleRootAndInclusionProof: a Tree's root and every proof are
// byte for byte MerkleRoot's and InclusionProof's, for every size up to 70
// and every leaf, so the server's cached proofs are the spec's.
func TestTreeIsMerkleRootAndInclusionProof(t *testing.T) {
	for n := range 71 {
		entries := make([]Entry, n)
		for i := range entries {
			entries[i] = Entry{Ticket: Hash(fmt.Sprintf("%032x", i*7+n)), Arrival: int64(i + 10)}
		}
		tr, err := NewTree(entries)
		if err != nil {
			t.Fatal(err)
		}
		root, err := MerkleRoot(entries)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Root() != root || tr.Size() != n {
			t.Fatalf("size %d: tree root %s (size %d), MerkleRoot %s", n, tr.Root(), tr.Size(), root)
		}
		for i := range n {
			got, err := tr.Proof(i)
			if err != nil {
				t.Fatal(err)
			}
			want, err := InclusionProof(entries, i)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("size %d leaf %d: tree proof %v, InclusionProof %v", n, i, got, want)
			}
			if err := VerifyInclusion(root, entries[i], i, n, got); err != nil {
				t.Fatalf("size %d leaf %d: %v", n, i, err)
			}
		}
		if _, err := tr.Proof(n); err == nil {
			t.Fatalf("size %d: a proof of leaf %d was given", n, n)
		}
	}
}
