package stock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// The hot path's scripts are sent by go-redis exactly once per attempt and
// attempted again here, where every attempt's outcome is seen: go-redis
// retries a command after EOF or a connection reset, which it may already
// have written (and Redis run), and returns only the last attempt's error.
// When that retry's dial was refused, or a Cluster node refused it
// (CLUSTERDOWN, TRYAGAIN, MOVED), the call looked "never sent" (NotSent)
// and the buyer was answered 503 unavailable, nothing reserved, while Redis
// held the reservation and the buyer mark. sendRetried makes NotSent exact:
// a call any of whose attempts may have been written is never "not sent".
//
// The retries are go-redis' own, kept (MaxRetries 1 and the Cluster's
// refusal retries): an attempt refused before it ran (a refused dial, no
// free connection, TRYAGAIN, CLUSTERDOWN, LOADING, READONLY, MASTERDOWN) is
// tried again up to refusedAttempts times with go-redis' backoff, and after
// an attempt that may have run (EOF, a reset) once more: the scripts are
// idempotent per request id, so a retry that runs answers what the first
// did. Timeouts are not tried again (see NotSent), nor is anything once the
// caller's context ended.
const (
	refusedAttempts = 6
	minBackoff      = 8 * time.Millisecond   // go-redis' MinRetryBackoff
	maxBackoff      = 512 * time.Millisecond // go-redis' MaxRetryBackoff
)

// onceCmd is a redis.Cmd that go-redis never sends a second time itself
// (Cmder.NoRetry): its single-node and Cluster clients then return the
// error of the one attempt that was made, redirections (MOVED, ASK) aside,
// which ran nothing.
type onceCmd struct{ *redis.Cmd }

func (onceCmd) NoRetry() bool { return true }

// onceScripter runs a redis.Script's EVALSHA and EVAL as onceCmds through
// process (a client's or a pipeline's Process); the rest of Scripter is
// the embedded one's.
type onceScripter struct {
	redis.Scripter
	process func(ctx context.Context, cmd redis.Cmder) error
}

func (o onceScripter) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return o.send(ctx, "eval", src, keys, args)
}

func (o onceScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return o.send(ctx, "evalsha", sha, keys, args)
}

func (o onceScripter) send(ctx context.Context, name, body string, keys []string, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, scriptArgs(name, body, keys, args)...)
	_ = o.process(ctx, onceCmd{cmd})
	return cmd
}

func scriptArgs(name, body string, keys []string, args []any) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, name, body, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, args...)
}

// runOnce runs script on rdb as script.Run does (EVALSHA, EVAL after
// NOSCRIPT), with the attempts of sendRetried.
func runOnce(ctx context.Context, rdb redis.UniversalClient, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	sc := onceScripter{Scripter: rdb, process: rdb.Process}
	var cmd *redis.Cmd
	err := sendRetried(ctx, func() error {
		cmd = script.Run(ctx, sc, keys, args...)
		return cmd.Err()
	})
	if err != cmd.Err() {
		cmd.SetErr(err)
	}
	return cmd
}

// sendRetried calls attempt until it succeeds, fails in a way not worth
// another attempt, or the attempts run out (see above), and returns the
// last error; when an earlier attempt may have been written and the last
// one looks never sent, the error says so (writtenError), and NotSent is
// false for it.
func sendRetried(ctx context.Context, attempt func() error) error {
	var written, err error
	for n := 0; ; n++ {
		err = attempt()
		if err == nil || ctx.Err() != nil {
			break
		}
		refused := retryRefused(err)
		if !refused && !maybeWritten(err) {
			break
		}
		if !NotSent(err) {
			if written != nil {
				break // twice possibly run: ambiguous, as go-redis left it
			}
			written = err
		}
		if n+1 >= refusedAttempts {
			break
		}
		if sleep(ctx, backoff(n)) != nil {
			break
		}
	}
	if written != nil && err != nil && NotSent(err) {
		return &writtenError{last: err, written: written}
	}
	return err
}

// writtenError is the last attempt's error of a call an earlier attempt of
// which may have run.
type writtenError struct{ last, written error }

func (e *writtenError) Error() string {
	return fmt.Sprintf("%v (after an attempt that may have run: %v)", e.last, e.written)
}

func (e *writtenError) Unwrap() error { return e.last }

// retryRefused reports an attempt that certainly ran nothing and may
// succeed a moment later. A closed client and a call the Coalescer never
// sent (its caller's context ended, or it closed) are final.
func retryRefused(err error) bool {
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, ErrNotSent) {
		return false
	}
	if NotSent(err) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"LOADING ", "READONLY ", "MASTERDOWN "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// maybeWritten reports a connection lost under an attempt that may have
// been written: worth one more attempt of an idempotent script. A timeout
// is not (NotSent's doc says why).
func maybeWritten(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func backoff(attempt int) time.Duration {
	d := min(maxBackoff, minBackoff<<attempt)
	return rand.N(d) + 1
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
