package auditor

import (
	"context"
	"errors"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/audit"
)

// reads returns a read func that hands out reports in turn (the last one
// again once they run out) and counts the reads.
func reads(reports ...audit.Report) (func(context.Context) (audit.Report, error), *int) {
	n := new(int)
	return func(context.Context) (audit.Report, error) {
		r := reports[min(*n, len(reports)-1)]
		*n++
		return r, nil
	}, n
}

func clean() audit.Report { return audit.Report{OK: true} }

func violated(v ...string) audit.Report { return audit.Report{Violations: v} }

// TestConfirmClearsATransientDrift: a violation that a re-read no longer
// shows (a unit caught between the stores) is not reported; it is counted
// as transient.
func TestConfirmClearsATransientDrift(t *testing.T) {
	read, n := reads(violated("I3 redis conservation: 9 != 10"), clean())
	rep, transient, err := confirm(context.Background(), read, 0)
	if err != nil || !rep.OK || !transient || *n != 2 {
		t.Fatalf("got ok=%v transient=%v err=%v after %d reads, want a clean report, transient, 2 reads", rep.OK, transient, err, *n)
	}
}

// TestConfirmReportsAViolationTwoReadsAgreeOn: a unit out of place holds
// still: the second read agrees and the violation is reported at once.
func TestConfirmReportsAViolationTwoReadsAgreeOn(t *testing.T) {
	read, n := reads(violated("I3 redis conservation: 9 != 10"))
	rep, transient, err := confirm(context.Background(), read, 0)
	if err != nil || rep.OK || transient || *n != 2 || len(rep.Violations) != 1 {
		t.Fatalf("got %+v transient=%v err=%v after %d reads, want the violation after 2 reads", rep, transient, err, *n)
	}
}

// TestConfirmReportsAViolationUnderAMovingSale: every read violates but
// with other numbers (a real fault while orders flow): reported after the
// last read allowed, never dropped.
func TestConfirmReportsAViolationUnderAMovingSale(t *testing.T) {
	read, n := reads(violated("a 1"), violated("a 2"), violated("a 3"), violated("a 4"), violated("a 5"), violated("a 6"))
	rep, transient, err := confirm(context.Background(), read, 0)
	if err != nil || rep.OK || transient || *n != confirmReads || rep.Violations[0] != "a 5" {
		t.Fatalf("got %+v transient=%v err=%v after %d reads, want the 5th read's violation after %d reads", rep, transient, err, *n, confirmReads)
	}
}

// TestConfirmReadsACleanItemOnce: nothing to confirm, one read.
func TestConfirmReadsACleanItemOnce(t *testing.T) {
	read, n := reads(clean())
	if rep, transient, err := confirm(context.Background(), read, 0); err != nil || !rep.OK || transient || *n != 1 {
		t.Fatalf("got ok=%v transient=%v err=%v after %d reads, want one clean read", rep.OK, transient, err, *n)
	}
}

// TestConfirmKeepsTheViolationWhenThePassEnds: a pass whose time runs out
// mid-confirmation reports what it read, not a clean item.
func TestConfirmKeepsTheViolationWhenThePassEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	read, _ := reads(violated("x"), clean())
	if rep, _, err := confirm(ctx, read, confirmPause); err != nil || rep.OK {
		t.Fatalf("got ok=%v err=%v, want the violation kept", rep.OK, err)
	}
	failing := func(context.Context) (audit.Report, error) { return audit.Report{}, errors.New("redis down") }
	if _, _, err := confirm(context.Background(), failing, 0); err == nil {
		t.Fatal("a failed read was not returned as an error")
	}
}
