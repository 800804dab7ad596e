package waitroom

import (
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// roundTree is one closed round's Merkle tree, kept with the drawn order
// so a ticket's inclusion proof costs a few map reads, not a round's worth
// of hashing per poll.
type roundTree struct {
	round draw.Round
	tree  *draw.Tree
	index map[string]int // ticket id -> its leaf
}

// roundTrees builds the trees of l's closed rounds from the tickets in
// line, each round's in arrival order (its leaves' order), and checks each
// against the root published at its close.
func roundTrees(l drawnLine) ([]roundTree, error) {
	out := make([]roundTree, len(l.closed))
	byArrival := make(map[int64]Ticket, len(l.tickets))
	for _, t := range l.tickets {
		byArrival[t.Arrival] = t
	}
	for i, r := range l.closed {
		rt := roundTree{round: r, index: make(map[string]int, r.Size())}
		entries := make([]draw.Entry, 0, r.Size())
		for a := r.First; a <= r.Last; a++ {
			t, ok := byArrival[a]
			if !ok {
				return nil, fmt.Errorf("waitroom: round %d: arrival %d: %w", r.N, a, ErrMissing)
			}
			rt.index[t.ID] = len(entries)
			entries = append(entries, draw.Entry{Ticket: draw.Hash(t.ID), Arrival: t.Arrival})
		}
		tree, err := draw.NewTree(entries)
		if err != nil {
			return nil, fmt.Errorf("waitroom: round %d: %w", r.N, err)
		}
		if tree.Root() != r.Root {
			return nil, fmt.Errorf("waitroom: round %d: its tickets give root %s, %s was published: %w", r.N, tree.Root(), r.Root, ErrMissing)
		}
		rt.tree = tree
		out[i] = rt
	}
	return out, nil
}

// proof is ticket id's inclusion proof in round rt.
func (rt roundTree) proof(id string) (*api.InclusionProof, bool) {
	i, ok := rt.index[id]
	if !ok {
		return nil, false
	}
	path, err := rt.tree.Proof(i)
	if err != nil {
		return nil, false
	}
	return &api.InclusionProof{Round: rt.round.N, Index: i, Size: rt.tree.Size(), Root: rt.round.Root, Path: path}, true
}
