package waitroom_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// TestOneServingLine: the order the gate offers down (ServingLine), the
// positions the ingress answers (Positions) and the published transcript
// (Transcript) are one order. 40 tickets taken before starts_at are
// shuffled: each ticket's position is its index in the line plus one, the
// transcript lists the same tickets' hashes in the same order and passes
// draw.Verify, and the line is not simply arrival order (40 tickets in
// arrival order under a fair shuffle: 1 in 40!). A ticket taken after
// starts_at stands at its arrival number, with no draw.
func TestOneServingLine(t *testing.T) {
	ctx := context.Background()
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	wr := waitroom.NewStore(st)
	const n = 40
	id := queuedItem(t, db, st, 10, time.Now().Add(time.Hour), 10, n)
	it, err := waitroom.ReadItem(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	// Round 0 closes once Redis' clock passes starts_at (the gate does it
	// on its pass); here the test's clock stands at the start.
	if _, err := waitroom.CloseRounds(ctx, db, wr, it, it.StartsAt); err != nil {
		t.Fatal(err)
	}

	line, err := waitroom.ServingLine(ctx, db, wr, it)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) != n {
		t.Fatalf("line of %d tickets, want %d", len(line), n)
	}
	pos := waitroom.NewPositions(db, wr, time.Second)
	inArrivalOrder := true
	for i, tk := range line {
		p, err := pos.Position(ctx, it, tk)
		if err != nil || p != int64(i+1) {
			t.Fatalf("ticket %s: position %d, %v; the line has it at %d", tk.ID, p, err, i+1)
		}
		inArrivalOrder = inArrivalOrder && tk.Arrival == int64(i+1)
	}
	if inArrivalOrder {
		t.Fatal("the line is in arrival order: the early tickets were not shuffled")
	}

	tr, err := waitroom.Transcript(ctx, db, wr, it)
	if err != nil {
		t.Fatal(err)
	}
	if err := draw.VerifyRounds(tr); err != nil {
		t.Fatal(err)
	}
	if len(tr.Rounds) != 1 || tr.Rounds[0].Size() != n || len(tr.Tickets) != n {
		t.Fatalf("transcript: rounds %+v over %d tickets, want one round of %d", tr.Rounds, len(tr.Tickets), n)
	}
	for i, e := range tr.Tickets {
		if e.Ticket != draw.Hash(line[i].ID) || e.Arrival != line[i].Arrival {
			t.Fatalf("transcript's ticket %d is %+v, the line's is %s (arrival %d)", i+1, e, draw.Hash(line[i].ID), line[i].Arrival)
		}
	}

	late := waitroom.Ticket{ID: "late", Arrival: n + 1, TakenAt: it.StartsAt.Add(time.Second)}
	if p, err := pos.Position(ctx, it, late); err != nil || p != n+1 {
		t.Fatalf("a ticket taken after starts_at: position %d, %v; want its arrival %d", p, err, n+1)
	}
}
