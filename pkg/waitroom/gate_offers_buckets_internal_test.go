package waitroom

import (
	"slices"
	"testing"
)

// TestBucketedPassChoosesDownTheLine: the pure steps of a bucketed item's
// waitlist pass (choose, sendTo, progress), table by table with no store.
// With a mover the pools serve the line in order wherever the units wait;
// without one each bucket serves its own buyers; the line stops at the
// first ticket not served and passes everything before it.
func TestBucketedPassChoosesDownTheLine(t *testing.T) {
	t.Parallel()
	cands := func(n int) []Candidate {
		out := make([]Candidate, n)
		for i := range out {
			out[i] = Candidate{Position: int64(11 + i), UserID: int64(100 + i)}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		homes   []int
		free    []bool
		pools   []int64
		cursors []int64
		mover   bool
		// after the offer calls: each bucket's cursor as its script left it
		after []int64

		stand    []standing
		need     []int64
		sent     map[int][]int64 // positions per bucket
		progress int64
	}{
		{
			name:  "two units in bucket 1 go to the first two free buyers, of buckets 0 and 2",
			homes: []int{0, 1, 2, 0}, free: []bool{true, false, true, true},
			pools: []int64{0, 2, 0}, cursors: []int64{0, 0, 0}, mover: true,
			after:    []int64{11, 0, 13},
			stand:    []standing{chosen, passed, chosen, waiting},
			need:     []int64{1, 0, 1},
			sent:     map[int][]int64{0: {11}, 2: {13}},
			progress: 13,
		},
		{
			name:  "a ticket considered before in its bucket is passed over",
			homes: []int{0, 0, 1}, free: []bool{true, true, true},
			pools: []int64{1, 0}, cursors: []int64{11, 0}, mover: true,
			after:    []int64{12, 0},
			stand:    []standing{passed, chosen, waiting},
			need:     []int64{1, 0},
			sent:     map[int][]int64{0: {12}},
			progress: 12,
		},
		{
			name:  "a chosen ticket its bucket's script did not reach (the move failed) stops the line",
			homes: []int{1, 0}, free: []bool{true, true},
			pools: []int64{2, 0}, cursors: []int64{0, 0}, mover: true,
			after:    []int64{12, 0},
			stand:    []standing{chosen, chosen},
			need:     []int64{1, 1},
			sent:     map[int][]int64{0: {12}, 1: {11}},
			progress: 10,
		},
		{
			name:  "without a mover each bucket serves its own, the others passed",
			homes: []int{0, 1, 1, 0}, free: []bool{true, true, true, true},
			pools: []int64{0, 1}, cursors: []int64{0, 0}, mover: false,
			after:    []int64{0, 12},
			stand:    []standing{passed, chosen, waiting, waiting},
			need:     []int64{0, 1},
			sent:     map[int][]int64{1: {12}},
			progress: 12,
		},
		{
			name:  "a holder before its bucket's last chosen ticket is sent along, for its cursor",
			homes: []int{0, 1, 0, 1}, free: []bool{false, false, true, true},
			pools: []int64{0, 1}, cursors: []int64{0, 0}, mover: true,
			after:    []int64{13, 0},
			stand:    []standing{passed, passed, chosen, waiting},
			need:     []int64{1, 0},
			sent:     map[int][]int64{0: {11, 13}},
			progress: 13,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cands(len(tc.homes))
			shares := make([]Waitlist, len(tc.pools))
			for b := range shares {
				shares[b] = Waitlist{Pool: tc.pools[b], Cursor: tc.cursors[b]}
			}
			stand, need := choose(cs, tc.homes, tc.free, shares, tc.mover)
			if !slices.Equal(stand, tc.stand) || !slices.Equal(need, tc.need) {
				t.Fatalf("choose: %v need %v; want %v need %v", stand, need, tc.stand, tc.need)
			}
			sent := sendTo(cs, tc.homes, stand, shares)
			if len(sent) != len(tc.sent) {
				t.Fatalf("sendTo: %v; want positions %v", sent, tc.sent)
			}
			for b, want := range tc.sent {
				var got []int64
				for _, c := range sent[b] {
					got = append(got, c.Position)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("sendTo bucket %d: %v; want %v", b, got, want)
				}
			}
			for b := range shares {
				shares[b].Cursor = tc.after[b]
			}
			if got := progress(10, cs, tc.homes, stand, shares); got != tc.progress {
				t.Fatalf("progress: %d; want %d", got, tc.progress)
			}
		})
	}
}
