package orderlog

import (
	"context"
	"errors"
	"time"

	"github.com/segmentio/kafka-go"
)

// tempRetry is how soon an admin read that Kafka refused as temporary is
// tried again, and tempAttempts how often at most (about a second: a
// leader election, or a new topic reaching every broker's metadata).
const (
	tempRetry    = 50 * time.Millisecond
	tempAttempts = 20
)

// retryTemporary runs read until it succeeds, fails for a reason Kafka does
// not call temporary, tempAttempts have been made, or ctx ends. Admin reads
// right after a topic is created, or while a partition's leader moves, are
// refused for a moment ("Unknown Topic Or Partition" from a broker whose
// metadata has not caught up, "Not Leader For Partition"): the admin warm's
// lag guard answered 503 for it, and a cluster test's describe-configs
// failed on a fresh machine.
func retryTemporary[T any](ctx context.Context, read func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := read()
		var kerr kafka.Error
		if err == nil || attempt == tempAttempts || !errors.As(err, &kerr) || !kerr.Temporary() {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(tempRetry):
		}
	}
}
