package draw_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// sale builds a transcript of n tickets, the first shuffled of them taken
// before starts_at, from a deterministic source; it returns the ticket ids by
// arrival (ids[0] arrived first).
func sale(t *testing.T, src *rand.ChaCha8, n, shuffled int) (draw.Transcript, []string) {
	t.Helper()
	seed, ids, entries := tickets(t, src, n)
	return draw.NewTranscript(7, seed, entries, int64(shuffled)), ids
}

// tickets draws a sale's seed and n ticket ids from src, and returns the
// seed, the ids by arrival (ids[0] arrived first) and their entries.
func tickets(t *testing.T, src *rand.ChaCha8, n int) (draw.Seed, []string, []draw.Entry) {
	t.Helper()
	seed, err := draw.NewSeed(src)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	entries := make([]draw.Entry, n)
	for i := range n {
		if ids[i], err = draw.NewTicketID(src); err != nil {
			t.Fatal(err)
		}
		entries[i] = draw.Entry{Ticket: draw.Hash(ids[i]), Arrival: int64(i + 1)}
	}
	return seed, ids, entries
}

// roundTrip is the transcript as a buyer downloads it: through its JSON form.
func roundTrip[T any](t *testing.T, tr T) T {
	t.Helper()
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return out
}

// tamper is a change to a published transcript of type T, and the refusal
// its verification must answer.
type tamper[T any] struct {
	name   string
	tamper func(tr *T)
	want   error
}

// expectRefused checks every case on its own copy of base, read back from
// its JSON as a verifier reads it: verify must refuse it with the case's
// error.
func expectRefused[T any](t *testing.T, base T, verify func(T) error, cases []tamper[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := roundTrip(t, base)
			c.tamper(&tr)
			if err := verify(tr); !errors.Is(err, c.want) {
				t.Fatalf("verify = %v, want %v", err, c.want)
			}
		})
	}
}

func TestTranscriptVerifiesFromItselfAlone(t *testing.T) {
	src := rand.NewChaCha8([32]byte{1})
	tr, ids := sale(t, src, 50, 40)
	got := roundTrip(t, tr)
	if err := draw.Verify(got); err != nil {
		t.Fatalf("a transcript the server built: %v", err)
	}
	// Every buyer finds their own ticket, at a position consistent with the
	// rule: early tickets in the first 40 places, late ones after in arrival
	// order.
	seen := map[int]bool{}
	for i, id := range ids {
		pos, err := draw.OwnPosition(got, id, int64(i+1))
		if err != nil {
			t.Fatalf("buyer of arrival %d: %v", i+1, err)
		}
		if seen[pos] {
			t.Fatalf("position %d given twice", pos)
		}
		seen[pos] = true
		if i < 40 && pos > 40 {
			t.Fatalf("early arrival %d served at %d", i+1, pos)
		}
		if i >= 40 && pos != i+1 {
			t.Fatalf("late arrival %d served at %d, want %d", i+1, pos, i+1)
		}
	}
	// The shuffle moved someone: with 40 tickets the identity order has
	// probability 1/40!.
	moved := false
	for i := range 40 {
		if got.Tickets[i].Arrival != int64(i+1) {
			moved = true
		}
	}
	if !moved {
		t.Fatal("the early tickets are in arrival order: not shuffled")
	}
	if _, err := draw.OwnPosition(got, "not-a-ticket", 1); !errors.Is(err, draw.ErrNotInTranscript) {
		t.Fatalf("unknown ticket: %v, want ErrNotInTranscript", err)
	}
	if _, err := draw.OwnPosition(got, ids[3], 5); !errors.Is(err, draw.ErrNotInTranscript) {
		t.Fatalf("wrong arrival: %v, want ErrNotInTranscript", err)
	}
}

func TestTamperedTranscriptFails(t *testing.T) {
	src := rand.NewChaCha8([32]byte{2})
	base, _ := sale(t, src, 30, 20)
	other, err := draw.NewSeed(src)
	if err != nil {
		t.Fatal(err)
	}
	expectRefused(t, base, draw.Verify, []tamper[draw.Transcript]{
		{"swapped pair of shuffled tickets", func(tr *draw.Transcript) {
			tr.Tickets[3], tr.Tickets[4] = tr.Tickets[4], tr.Tickets[3]
		}, draw.ErrOrder},
		{"swapped pair of late tickets", func(tr *draw.Transcript) {
			tr.Tickets[25], tr.Tickets[26] = tr.Tickets[26], tr.Tickets[25]
		}, draw.ErrOrder},
		{"wrong seed, commitment kept", func(tr *draw.Transcript) {
			tr.Seed = other
		}, draw.ErrCommitment},
		{"wrong seed with its own commitment, order kept", func(tr *draw.Transcript) {
			tr.Seed = other
			tr.Commitment = other.Commitment()
		}, draw.ErrOrder},
		{"late ticket moved to the front", func(tr *draw.Transcript) {
			late := tr.Tickets[25]
			copy(tr.Tickets[1:26], tr.Tickets[0:25])
			tr.Tickets[0] = late
		}, draw.ErrOrder},
		{"late ticket counted as shuffled", func(tr *draw.Transcript) {
			tr.Shuffled++
		}, draw.ErrOrder},
		{"ticket given another arrival", func(tr *draw.Transcript) {
			tr.Tickets[0].Arrival = tr.Tickets[1].Arrival
		}, draw.ErrArrivals},
		{"ticket dropped from the middle of the arrivals", func(tr *draw.Transcript) {
			tr.Tickets = append(tr.Tickets[:2:2], tr.Tickets[3:]...)
		}, draw.ErrArrivals},
	})
}

func TestSeedFormsRoundTrip(t *testing.T) {
	s, err := draw.NewSeed(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := draw.ParseSeed(s.String())
	if err != nil || p != s {
		t.Fatalf("ParseSeed(String()) = %v, %v", p, err)
	}
	if len(s.Commitment()) != 64 {
		t.Fatalf("commitment %q is not a hex sha256", s.Commitment())
	}
	if _, err := draw.ParseSeed("abcd"); err == nil {
		t.Fatal("a short seed parsed")
	}
	a, _ := draw.NewTicketID(nil)
	b, _ := draw.NewTicketID(nil)
	if a == b || len(a) != 32 {
		t.Fatalf("ticket ids %q, %q", a, b)
	}
}

// TestOnlyTheOwnerSeesTheirTicketReplaced: a ticket swapped for another hash,
// or the last arrival dropped, can leave a transcript that is consistent in
// itself (Verify cannot know which tickets existed); the owner's own check
// catches it, which is why OwnPosition is the buyer's check.
func TestOnlyTheOwnerSeesTheirTicketReplaced(t *testing.T) {
	src := rand.NewChaCha8([32]byte{3})
	tr, ids := sale(t, src, 30, 20)
	// The last arrival dropped: arrivals 1..29 remain, in order.
	dropped := roundTrip(t, tr)
	dropped.Tickets = dropped.Tickets[:29]
	if err := draw.Verify(dropped); err != nil {
		t.Fatalf("a consistent shorter transcript: %v", err)
	}
	if _, err := draw.OwnPosition(dropped, ids[29], 30); !errors.Is(err, draw.ErrNotInTranscript) {
		t.Fatalf("owner of the dropped ticket: %v, want ErrNotInTranscript", err)
	}
	// A late ticket replaced by another hash keeps the late order.
	replaced := roundTrip(t, tr)
	replaced.Tickets[25].Ticket = draw.Hash("a ticket nobody was given")
	if err := draw.Verify(replaced); err != nil {
		t.Fatalf("a late hash replaced keeps the order: %v", err)
	}
	if _, err := draw.OwnPosition(replaced, ids[25], 26); !errors.Is(err, draw.ErrNotInTranscript) {
		t.Fatalf("owner of the replaced ticket: %v, want ErrNotInTranscript", err)
	}
	// Everyone else still finds their own.
	if _, err := draw.OwnPosition(replaced, ids[0], 1); err != nil {
		t.Fatalf("another buyer: %v", err)
	}
}
