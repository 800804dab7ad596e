package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tally"
)

// liveView is GET /api/v1/admin/items/{id}/live: one read of a running sale
// for the console and `flashsalectl sale watch`. A part that could not be
// read is null and named in Unavailable: a console must keep drawing what it
// can during the outage it is there to show.
type liveView struct {
	At              time.Time            `json:"at"`
	Item            *api.AdminItemDetail `json:"item"`
	Audit           *audit.Report        `json:"audit"`
	Answers         map[string]int64     `json:"answers"`
	AcceptedLatency *tally.Histogram     `json:"accepted_latency"`
	ConsumerLag     *int64               `json:"consumer_lag"`
	DLQMessages     *int64               `json:"dlq_messages"`
	Unavailable     []string             `json:"unavailable"`
	mu              sync.Mutex           // guards Unavailable while the parts are read at once
	down            map[string]bool      // parts already named
}

func (v *liveView) unavailable(part string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.down[part] {
		v.down[part] = true
		v.Unavailable = append(v.Unavailable, part)
	}
}

// liveItem reads the parts of an item's live view at once, each within the
// store timeout (the audit and the DLQ bounds within their usual bounds), so
// one dependency's outage costs the answer one timeout, not the sum.
func (s *Server) liveItem(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	v := &liveView{At: time.Now().UTC(), Unavailable: []string{}, down: map[string]bool{}}
	var missing bool
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		missing = s.liveItemAndAudit(ctx, id, v)
	}()
	go func() {
		defer wg.Done()
		rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
		defer cancel()
		snap, err := tally.Read(rctx, s.st.Client(), id)
		if err != nil {
			s.log.WarnContext(ctx, "live: tally", "err", err)
			v.unavailable("redis")
			return
		}
		v.Answers, v.AcceptedLatency = snap.Answers, &snap.Accepted
	}()
	go func() {
		defer wg.Done()
		lag, err := s.consumerLag(ctx)
		if err != nil {
			s.log.WarnContext(ctx, "live: consumer lag", "err", err)
			v.unavailable("kafka")
			return
		}
		v.ConsumerLag = &lag
	}()
	go func() {
		defer wg.Done()
		dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
		defer cancel()
		n, err := s.letters().Count(dctx)
		if err != nil {
			s.log.WarnContext(ctx, "live: dlq bounds", "err", err)
			v.unavailable("kafka")
			return
		}
		v.DLQMessages = &n
	}()
	wg.Wait()
	if missing {
		return notFound("no such item")
	}
	return c.JSON(http.StatusOK, v)
}

// liveItemAndAudit fills the item (as GET /admin/items/{id} shows it) and
// its audit, and reports whether MySQL said the item does not exist.
func (s *Server) liveItemAndAudit(ctx context.Context, id int64, v *liveView) (missing bool) {
	d, redisOK, err := s.adminDetail(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return true
	}
	if err != nil {
		s.log.WarnContext(ctx, "live: item", "err", err)
		v.unavailable("mysql")
		return false
	}
	if !redisOK {
		v.unavailable("redis")
	}
	v.Item = &d
	actx, cancel := context.WithTimeout(ctx, 2*s.cfg.StoreTimeout)
	defer cancel()
	rep, err := audit.Item(actx, s.db, s.st, id)
	switch {
	case errors.Is(err, store.ErrNotFound): // deleted between the two reads
		return true
	case errors.Is(err, stock.ErrUnavailable):
		v.unavailable("redis")
	case err != nil:
		s.log.WarnContext(ctx, "live: audit", "err", err)
		v.unavailable("mysql")
	default:
		v.Audit = &rep
	}
	return false
}
