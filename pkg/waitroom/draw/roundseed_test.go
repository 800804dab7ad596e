package draw_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// TestRoundSeedBindsEveryInput: changing any one input of the derivation
// changes the round seed, and no two of the changed inputs give the same
// seed (the beacon's length prefix keeps "" and "00" apart).
func TestRoundSeedBindsEveryInput(t *testing.T) {
	var seed draw.Seed
	for i := range seed {
		seed[i] = byte(i)
	}
	root, err := draw.MerkleRoot(entriesFrom(4, 3))
	if err != nil {
		t.Fatal(err)
	}
	base := draw.Round{N: 1, First: 4, Last: 6, Root: root, Beacon: "0a0b0c0d"}
	otherSeed := seed
	otherSeed[31] ^= 1
	cases := []struct {
		name  string
		seed  draw.Seed
		item  int64
		round draw.Round
	}{
		{"base", seed, 42, base},
		{"server seed", otherSeed, 42, base},
		{"item", seed, 43, base},
		{"negative item", seed, -42, base},
		{"round number", seed, 42, with(base, func(r *draw.Round) { r.N = 2 })},
		{"first", seed, 42, with(base, func(r *draw.Round) { r.First = 5 })},
		{"last", seed, 42, with(base, func(r *draw.Round) { r.Last = 7 })},
		{"root", seed, 42, with(base, func(r *draw.Round) { r.Root = flip(root, 31) })},
		{"beacon byte", seed, 42, with(base, func(r *draw.Round) { r.Beacon = "0a0b0c0e" })},
		{"beacon longer", seed, 42, with(base, func(r *draw.Round) { r.Beacon = "0a0b0c0d00" })},
		{"no beacon", seed, 42, with(base, func(r *draw.Round) { r.Beacon = "" })},
		{"beacon of one zero byte", seed, 42, with(base, func(r *draw.Round) { r.Beacon = "00" })},
	}
	seen := map[draw.Seed]string{}
	for _, c := range cases {
		got, err := draw.RoundSeed(c.seed, c.item, c.round)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if prev, ok := seen[got]; ok {
			t.Fatalf("%s gives the same round seed as %s", c.name, prev)
		}
		seen[got] = c.name
	}
	// Seed is not an input: the derivation never reads the revealed value.
	a, _ := draw.RoundSeed(seed, 42, base)
	b, _ := draw.RoundSeed(seed, 42, with(base, func(r *draw.Round) { r.Seed = strings.Repeat("ff", 32) }))
	if a != b {
		t.Fatal("the round's Seed field changed its derivation")
	}

	bad := map[string]draw.Round{
		"upper-case root":   with(base, func(r *draw.Round) { r.Root = strings.ToUpper(root) }),
		"short root":        with(base, func(r *draw.Round) { r.Root = root[:62] }),
		"odd beacon":        with(base, func(r *draw.Round) { r.Beacon = "abc" }),
		"upper-case beacon": with(base, func(r *draw.Round) { r.Beacon = "0A" }),
		"beacon too long":   with(base, func(r *draw.Round) { r.Beacon = strings.Repeat("00", 1<<16) }),
		"negative round":    with(base, func(r *draw.Round) { r.N = -1 }),
	}
	if strconv.IntSize == 64 {
		beyond := int64(1) << 32
		bad["round beyond 2^32-1"] = with(base, func(r *draw.Round) { r.N = int(beyond) })
	}
	for name, r := range bad {
		if _, err := draw.RoundSeed(seed, 42, r); !errors.Is(err, draw.ErrRounds) {
			t.Errorf("%s: %v, want ErrRounds", name, err)
		}
	}
	longest := with(base, func(r *draw.Round) { r.Beacon = strings.Repeat("00", 1<<16-1) })
	if _, err := draw.RoundSeed(seed, 42, longest); err != nil {
		t.Errorf("a beacon of 65535 bytes: %v", err)
	}
}

func with(r draw.Round, change func(*draw.Round)) draw.Round {
	change(&r)
	return r
}
