package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestConcurrentCreates creates 16 new items of consecutive ids at once, as
// a script setting up a many-item sale does: every PUT is 200. The row lock
// a create takes on an id that does not exist yet is a gap lock, shared
// with the other creates of the same gap, so their inserts deadlock (1213)
// and InnoDB aborts all but one: each such create must be tried again, not
// answered 503.
func TestConcurrentCreates(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	first := testenv.ItemID()
	start, end := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	var wg sync.WaitGroup
	codes := make([]resp, 16)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := first + int64(i)
			body := fmt.Sprintf(`{"name":"item %d","price_cents":999,"stock":10,"per_user_limit":1,"starts_at":%q,"ends_at":%q}`, id, start, end)
			codes[i] = h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), body, h.admin())
		}()
	}
	wg.Wait()
	for i, r := range codes {
		if r.Code != http.StatusOK {
			t.Errorf("create of item %d: %d %s", first+int64(i), r.Code, r.Body)
		}
	}
	for i := range codes {
		if n := h.redisStock(first + int64(i)); n != 10 {
			t.Errorf("item %d: Redis stock %d, want 10", first+int64(i), n)
		}
	}
}
