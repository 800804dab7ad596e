package stock

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
)

// sendRetried's verdicts for sequences of attempt errors: a call is "not
// sent" only when no attempt may have run.
func TestSendRetriedNeverNotSentAfterAWrite(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tryAgain := errors.New("TRYAGAIN Multiple keys request during rehashing of slot")
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		name     string
		attempts []error
		calls    int
		notSent  bool
		ok       bool
	}{
		{"refused, then served", []error{refused, nil}, 2, false, true},
		{"refused every time", []error{refused, refused, refused, refused, refused, refused, refused}, refusedAttempts, true, false},
		{"TRYAGAIN every time", []error{tryAgain, tryAgain, tryAgain, tryAgain, tryAgain, tryAgain}, refusedAttempts, true, false},
		{"EOF, then refused", []error{io.EOF, refused, refused, refused, refused, refused}, refusedAttempts, false, false},
		{"reset, then TRYAGAIN", []error{reset, tryAgain, tryAgain, tryAgain, tryAgain, tryAgain}, refusedAttempts, false, false},
		{"refused, EOF, refused", []error{refused, io.EOF, refused, refused, refused, refused}, refusedAttempts, false, false},
		{"EOF twice: no third attempt", []error{io.EOF, io.EOF, nil}, 2, false, false},
		{"EOF, then served", []error{io.EOF, nil}, 2, false, true},
		{"a script error is final", []error{errors.New("ERR user_script:1: boom")}, 1, false, false},
		{"a timeout is final", []error{context.DeadlineExceeded}, 1, false, false},
		{"left the queue unsent is final", []error{ErrNotSent}, 1, true, false},
		{"EOF, then left the queue unsent", []error{io.EOF, ErrNotSent}, 2, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := sendRetried(context.Background(), func() error {
				e := c.attempts[min(calls, len(c.attempts)-1)]
				calls++
				return e
			})
			if calls != c.calls {
				t.Errorf("%d attempts, want %d", calls, c.calls)
			}
			if (err == nil) != c.ok {
				t.Errorf("err %v, want ok %v", err, c.ok)
			}
			if got := NotSent(err); got != c.notSent {
				t.Errorf("NotSent(%v) = %v, want %v", err, got, c.notSent)
			}
		})
	}
}
