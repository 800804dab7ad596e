package tally

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// Snapshot is an item's tally as Redis holds it: the sum of what every
// replica has flushed, cumulative since the item's first answer.
type Snapshot struct {
	// Answers counts answers by outcome; every Known outcome is there.
	Answers map[string]int64
	// Accepted is the latency histogram of the 202s.
	Accepted Histogram
}

// Read reads item's tally, one HGETALL. An item nobody answered for yet
// reads as zeros.
func Read(ctx context.Context, rdb redis.UniversalClient, item int64) (Snapshot, error) {
	h, err := rdb.HGetAll(ctx, stock.TallyKey(item)).Result()
	if err != nil {
		return Snapshot{}, fmt.Errorf("tally: read item %d: %w", item, err)
	}
	s := Snapshot{Answers: make(map[string]int64, len(Known))}
	for _, k := range Known {
		s.Answers[k] = 0
	}
	var per [nBuckets]int64
	var sumUS int64
	for k, v := range h {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Snapshot{}, fmt.Errorf("tally: item %d field %s: %w", item, k, err)
		}
		switch {
		case k == latSumField:
			sumUS = n
		case strings.HasPrefix(k, answerField):
			s.Answers[k[len(answerField):]] = n
		case strings.HasPrefix(k, latField):
			i, err := strconv.Atoi(k[len(latField):])
			if err != nil || i < 0 || i >= nBuckets {
				return Snapshot{}, fmt.Errorf("tally: item %d: unknown field %s", item, k)
			}
			per[i] = n
		}
	}
	s.Accepted = histogram(per, sumUS)
	return s, nil
}
