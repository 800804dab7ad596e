package draw_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// entriesFrom is n tickets with distinct hashes and arrivals first..first+n-1,
// as one round holds them.
func entriesFrom(first int64, n int) []draw.Entry {
	out := make([]draw.Entry, n)
	for i := range n {
		out[i] = draw.Entry{Ticket: draw.Hash(fmt.Sprintf("ticket-%d", i)), Arrival: first + int64(i)}
	}
	return out
}

// refRoot computes the tree another way than the package does: bottom up,
// pairing neighbours at each level and carrying an odd last node up
// unchanged, which builds the same tree as RFC 6962's recursive split.
func refRoot(entries []draw.Entry) string {
	if len(entries) == 0 {
		s := sha256.Sum256(nil)
		return hex.EncodeToString(s[:])
	}
	level := make([][]byte, len(entries))
	for i, e := range entries {
		h, _ := hex.DecodeString(e.Ticket)
		b := append([]byte{0}, h...)
		b = append(b, byte(e.Arrival>>56), byte(e.Arrival>>48), byte(e.Arrival>>40), byte(e.Arrival>>32),
			byte(e.Arrival>>24), byte(e.Arrival>>16), byte(e.Arrival>>8), byte(e.Arrival))
		s := sha256.Sum256(b)
		level[i] = s[:]
	}
	for len(level) > 1 {
		var next [][]byte
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			s := sha256.Sum256(append(append([]byte{1}, level[i]...), level[i+1]...))
			next = append(next, s[:])
		}
		level = next
	}
	return hex.EncodeToString(level[0])
}

// sides is the side of each sibling on leaf i's path in a tree of m leaves,
// nearest first ('L' when the sibling is the left one), by RFC 6962's split.
func sides(i, m int) []byte {
	if m <= 1 {
		return nil
	}
	k := 1
	for k<<1 < m {
		k <<= 1
	}
	if i < k {
		return append(sides(i, k), 'R')
	}
	return append(sides(i-k, m-k), 'L')
}

// flip returns h (hex) with its byte i changed.
func flip(h string, i int) string {
	b, _ := hex.DecodeString(h)
	b[i%len(b)] ^= 0x01
	return hex.EncodeToString(b)
}

func TestMerkleRootsAndProofs(t *testing.T) {
	for n := 0; n <= 33; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			entries := entriesFrom(100, n)
			root, err := draw.MerkleRoot(entries)
			if err != nil {
				t.Fatal(err)
			}
			if want := refRoot(entries); root != want {
				t.Fatalf("root %s, the bottom-up construction gives %s", root, want)
			}
			if _, err := draw.InclusionProof(entries, n); !errors.Is(err, draw.ErrProof) {
				t.Fatalf("proof of index %d in %d: %v, want ErrProof", n, n, err)
			}
			for i, e := range entries {
				proof, err := draw.InclusionProof(entries, i)
				if err != nil {
					t.Fatal(err)
				}
				if err := draw.VerifyInclusion(root, e, i, n, proof); err != nil {
					t.Fatalf("index %d: %v", i, err)
				}
				refuse := func(what string, root string, e draw.Entry, index, size int, proof []string) {
					t.Helper()
					if err := draw.VerifyInclusion(root, e, index, size, proof); !errors.Is(err, draw.ErrProof) {
						t.Fatalf("index %d, %s: %v, want ErrProof", i, what, err)
					}
				}
				refuse("root flipped", flip(root, i), e, i, n, proof)
				refuse("ticket flipped", root, draw.Entry{Ticket: flip(e.Ticket, i), Arrival: e.Arrival}, i, n, proof)
				refuse("arrival changed", root, draw.Entry{Ticket: e.Ticket, Arrival: e.Arrival + 1}, i, n, proof)
				for j := range proof {
					bad := append([]string(nil), proof...)
					bad[j] = flip(bad[j], j)
					refuse(fmt.Sprintf("proof hash %d flipped", j), root, e, i, n, bad)
				}
				if len(proof) > 0 {
					refuse("proof cut short", root, e, i, n, proof[:len(proof)-1])
				}
				refuse("proof extended", root, e, i, n, append(append([]string(nil), proof...), root))
				refuse("index after", root, e, i+1, n, proof)
				if i > 0 {
					refuse("index before", root, e, i-1, n, proof)
				}
				refuse("negative index", root, e, -1, n, proof)
				refuse("size 0", root, e, i, 0, proof)
				// The root does not commit to the size by itself: a proof
				// also fits every other size whose tree puts the siblings of
				// leaf i on the same sides (index 0 of 17..32 leaves, say).
				// The size comes from the round (Last-First+1), not from
				// the prover; every size that changes the path is refused.
				for m := i + 1; m <= 2*n+1; m++ {
					err := draw.VerifyInclusion(root, e, i, m, proof)
					if m == n {
						continue
					}
					if slices.Equal(sides(i, m), sides(i, n)) {
						if err != nil {
							t.Fatalf("index %d: size %d has the same path as %d but fails: %v", i, m, n, err)
						}
						continue
					}
					if !errors.Is(err, draw.ErrProof) {
						t.Fatalf("index %d: wrong size %d (of %d): %v, want ErrProof", i, m, n, err)
					}
				}
			}
		})
	}
}

// TestInteriorNodeIsNotATicket: in a tree of 2^k leaves the level above the
// leaves is itself a tree of 2^(k-1) "leaves", the pairs' nodes, with the
// same root; without domain separation a node could be passed off as a leaf
// of that smaller tree with the leaf's proof minus its first hash
// (merkle_internal_test.go checks that the raw path does lead to the root).
// A ticket is always hashed as a leaf (prefix 0x00, hash, arrival), so no
// entry can stand for a node.
func TestInteriorNodeIsNotATicket(t *testing.T) {
	for _, n := range []int{2, 4, 8, 16, 32} {
		entries := entriesFrom(1, n)
		root, err := draw.MerkleRoot(entries)
		if err != nil {
			t.Fatal(err)
		}
		for j := range n / 2 {
			node, err := draw.MerkleRoot(entries[2*j : 2*j+2])
			if err != nil {
				t.Fatal(err)
			}
			proof, err := draw.InclusionProof(entries, 2*j)
			if err != nil {
				t.Fatal(err)
			}
			for _, arrival := range []int64{0, int64(j), int64(2*j + 1)} {
				e := draw.Entry{Ticket: node, Arrival: arrival}
				if err := draw.VerifyInclusion(root, e, j, n/2, proof[1:]); !errors.Is(err, draw.ErrProof) {
					t.Fatalf("n=%d: node %d passed as a ticket: %v", n, j, err)
				}
			}
		}
	}
}

func TestMerkleRefusesMalformedInput(t *testing.T) {
	ok := entriesFrom(1, 3)
	cases := map[string][]draw.Entry{
		"arrivals descending": {ok[1], ok[0]},
		"arrival repeated":    {ok[0], {Ticket: ok[1].Ticket, Arrival: ok[0].Arrival}},
		"upper-case hash":     {{Ticket: "AB" + ok[0].Ticket[2:], Arrival: 1}},
		"short hash":          {{Ticket: ok[0].Ticket[:62], Arrival: 1}},
	}
	for name, entries := range cases {
		if _, err := draw.MerkleRoot(entries); !errors.Is(err, draw.ErrArrivals) {
			t.Errorf("%s: MerkleRoot = %v, want ErrArrivals", name, err)
		}
	}
	root, _ := draw.MerkleRoot(ok)
	proof, _ := draw.InclusionProof(ok, 0)
	if err := draw.VerifyInclusion(root[:62], ok[0], 0, 3, proof); !errors.Is(err, draw.ErrProof) {
		t.Errorf("short root: %v, want ErrProof", err)
	}
	if err := draw.VerifyInclusion(root, ok[0], 0, 3, []string{"zz", proof[1]}); !errors.Is(err, draw.ErrProof) {
		t.Errorf("proof not hex: %v, want ErrProof", err)
	}
	if err := draw.VerifyInclusion(root, ok[0], 0, 0, nil); !errors.Is(err, draw.ErrProof) {
		t.Errorf("empty tree: %v, want ErrProof", err)
	}
}
