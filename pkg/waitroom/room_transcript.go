package waitroom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// ErrNotRevealed: the transcript is asked for before starts_at, when the
// seed must not be shown.
var ErrNotRevealed = errors.New("waitroom: not revealed before starts_at")

// Transcript is queued item it's published transcript (Transcript, from
// starts_at on): ErrNotRevealed before the start, store.ErrNotFound when
// the item has no waiting room, ErrUnavailable when a store does not
// answer.
func (r *Room) Transcript(ctx context.Context, it Item) (draw.RoundTranscript, error) {
	if time.Now().Before(it.StartsAt) {
		return draw.RoundTranscript{}, ErrNotRevealed
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	defer cancel()
	tr, err := Transcript(rctx, r.db, r.wr, it)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return draw.RoundTranscript{}, err
	case err != nil:
		r.log.WarnContext(ctx, "queue: transcript", "item_id", it.ID, "err", err)
		return draw.RoundTranscript{}, fmt.Errorf("transcript of item %d: %w", it.ID, ErrUnavailable)
	}
	return tr, nil
}
