package waitroom

import (
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestGateMoveWakesOnlyThePollsItReached: a move of the gate wakes the
// waiting polls whose position it reached, and no other. Every poll of an
// item woken on every move (every 100 ms: thousands of goroutines taking
// the reader's lock to find they still wait) cost the ingress CPU just
// when the first admissions are answered; a poll not reached has nothing
// to answer until its deadline.
func TestGateMoveWakesOnlyThePollsItReached(t *testing.T) {
	wi := newWatchedItem()
	early, _ := wi.waitFor(1)
	if closed(early) {
		t.Fatal("a poll woken before the gate was read")
	}
	wi.setGate(0, 100, time.Now())
	at5, _ := wi.waitFor(5)
	at10, _ := wi.waitFor(10)
	at50, cancel50 := wi.waitFor(50)
	at50b, _ := wi.waitFor(50) // the same ticket polled twice
	wi.setGate(3, 100, time.Now())
	if !closed(early) || closed(at5) || closed(at10) || closed(at50) {
		t.Fatalf("gate at 3: woken 1 %v, 5 %v, 10 %v, 50 %v; want only 1", closed(early), closed(at5), closed(at10), closed(at50))
	}
	wi.setGate(10, 100, time.Now())
	if !closed(at5) || !closed(at10) || closed(at50) {
		t.Fatalf("gate at 10: woken 5 %v, 10 %v, 50 %v; want 5 and 10", closed(at5), closed(at10), closed(at50))
	}
	if ch, _ := wi.waitFor(7); !closed(ch) {
		t.Error("a poll whose position the gate passed already waits")
	}
	cancel50() // that poll answered at its deadline
	wi.setGate(60, 100, time.Now())
	if !closed(at50b) {
		t.Error("the second poll of position 50 not woken at 60")
	}
	if n := wi.waiters.Len(); n != 0 {
		t.Errorf("%d polls still registered, want none", n)
	}
	cancel50() // twice: harmless
}
