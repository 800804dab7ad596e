package stock

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// WaitOutMove runs a call again while a reshard refuses it, and never
// again once an attempt may have run or failed otherwise.
func TestWaitOutMove(t *testing.T) {
	tryAgain := errors.New("TRYAGAIN Multiple keys request during rehashing of slot")
	ask := errors.New("ASK 3999 127.0.0.1:7002")
	moved := errors.New("MOVED 3999 127.0.0.1:7002")
	down := errors.New("CLUSTERDOWN The cluster is down")
	written := &writtenError{last: tryAgain, written: io.EOF}
	for _, c := range []struct {
		name        string
		attempts    []error // the last one repeats
		wait        time.Duration
		wantCalls   int
		wantRefused int
		wantErr     error
	}{
		{"through after the move", []error{tryAgain, ask, moved, nil}, time.Minute, 4, 3, nil},
		{"first attempt runs", []error{nil}, time.Minute, 1, 0, nil},
		{"an outage is not waited out", []error{down}, time.Minute, 1, 0, down},
		{"an attempt that may have run is never sent again", []error{tryAgain, written}, time.Minute, 2, 1, written},
		{"no wait: one attempt", []error{tryAgain}, 0, 1, 1, tryAgain},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			refused, err := WaitOutMove(context.Background(), c.wait, func() error {
				e := c.attempts[min(calls, len(c.attempts)-1)]
				calls++
				return e
			})
			if calls != c.wantCalls || refused != c.wantRefused || err != c.wantErr {
				t.Fatalf("calls %d refused %d err %v, want %d %d %v", calls, refused, err, c.wantCalls, c.wantRefused, c.wantErr)
			}
		})
	}
}

// A move that outlasts the wait ends it with the move's refusal, and so
// does the caller's context.
func TestWaitOutMoveGivesUp(t *testing.T) {
	tryAgain := errors.New("TRYAGAIN Multiple keys request during rehashing of slot")
	calls := 0
	refused, err := WaitOutMove(context.Background(), 50*time.Millisecond, func() error { calls++; return tryAgain })
	if err != tryAgain || refused != calls || calls < 2 {
		t.Fatalf("after the wait: calls %d refused %d err %v, want >= 2 refused attempts ending in TRYAGAIN", calls, refused, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err = WaitOutMove(ctx, time.Hour, func() error {
		calls++
		if calls == 3 {
			cancel()
		}
		return tryAgain
	})
	if err != tryAgain || calls != 3 {
		t.Fatalf("after the context ended: calls %d err %v, want 3 calls ending in TRYAGAIN", calls, err)
	}
}

func TestSlotMoving(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{errors.New("ASK 3999 127.0.0.1:7002"), true},
		{errors.New("MOVED 3999 127.0.0.1:7002"), true},
		{errors.New("CLUSTERDOWN The cluster is down"), false},
		{io.EOF, false},
		{&writtenError{last: errors.New("TRYAGAIN x"), written: io.EOF}, false},
		{nil, false},
	} {
		if got := SlotMoving(c.err); got != c.want {
			t.Errorf("SlotMoving(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
