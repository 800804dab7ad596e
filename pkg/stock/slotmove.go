package stock

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotMoving reports a call that Redis Cluster refused, before running it,
// because the slot of its keys is being resharded: TRYAGAIN (a multi-key
// script whose keys are split between the two nodes, or one of which is
// new), or an ASK or MOVED left over once go-redis had followed as many
// redirections as it follows. The refusal lasts as long as the move
// (seconds for a paced reshard), not as long as an outage: the caller may
// wait it out (WaitOutMove). An error of a call an earlier attempt of which
// may have run (sendRetried's writtenError) is not one: NotSent is false
// for it, and nothing that may have run is ever sent again.
func SlotMoving(err error) bool {
	var we *writtenError
	return err != nil && !errors.As(err, &we) && slotMoved(err)
}

// slotMoved reports a slot move's refusal (TRYAGAIN, MOVED, ASK), whatever
// came before it.
func slotMoved(err error) bool {
	if redis.IsTryAgainError(err) {
		return true
	}
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	_, ok := redis.IsAskError(err)
	return ok
}

// Pauses between the attempts of WaitOutMove: short at first (a fast
// reshard moves a slot in tens of milliseconds), growing to a few attempts
// a second per waiting call, so a hot item's waiting buyers do not turn a
// reshard into a storm of refused commands on the two nodes.
const (
	moveBackoffMin = 10 * time.Millisecond
	moveBackoffMax = 250 * time.Millisecond
)

// WaitOutMove calls attempt, and again while it fails with a slot move's
// refusal (SlotMoving), until it succeeds, fails otherwise, wait has passed
// since the first attempt or ctx ends; it returns the last attempt's error
// and how many attempts were refused by a move. Each attempt is a whole
// call (a multi-key script is retried whole, its keys sharing one hash
// tag), which ran nothing when it was refused, so the caller may compute
// it afresh (a new deadline). wait <= 0 makes it one attempt.
func WaitOutMove(ctx context.Context, wait time.Duration, attempt func() error) (refused int, err error) {
	start := time.Now()
	for {
		err = attempt()
		if err == nil || !SlotMoving(err) {
			return refused, err
		}
		refused++
		d := MovePause(refused)
		if time.Since(start)+d > wait {
			return refused, err
		}
		if sleep(ctx, d) != nil {
			return refused, err
		}
	}
}

// MovePause is the pause before the next attempt of a call whose last n
// attempts (n >= 1) a slot move refused: from moveBackoffMin, doubling to
// moveBackoffMax, jittered by half either way so waiters do not retry in
// step.
func MovePause(n int) time.Duration {
	pause := moveBackoffMin
	for i := 1; i < n && pause < moveBackoffMax; i++ {
		pause = min(moveBackoffMax, 2*pause)
	}
	return rand.N(pause) + pause/2
}
