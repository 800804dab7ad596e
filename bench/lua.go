package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// LuaFigure is the bare admission script's throughput on its sold-out path,
// measured in the same invocation: the ceiling the HTTP ingress is compared
// with (issue 7 asks for the ratio).
type LuaFigure struct {
	Path        string  `json:"path"`
	Concurrency int     `json:"concurrency"`
	Calls       int64   `json:"calls"`
	PerSec      float64 `json:"per_sec"`
	// Failed counts calls that found Redis unavailable (a timeout on a
	// loaded machine); they are left out of PerSec, not fatal.
	Failed int64 `json:"failed,omitempty"`
}

// MeasureLua runs stock.Store.Admit (one EVALSHA round trip each, as the
// ingress did before it coalesced its calls; kept so the ratio means what
// issue 7 measured) against a throwaway item with no stock, for d, at the given
// concurrency, then deletes the item's keys. The sold-out path reserves
// nothing, so no reservation, order or MySQL row is ever created.
func MeasureLua(ctx context.Context, rdb redis.UniversalClient, concurrency int, d time.Duration) (LuaFigure, error) {
	st := stock.New(rdb)
	item := newItemID()
	now := time.Now()
	if err := st.Warm(ctx, stock.Snapshot{ItemID: item, Stock: 0, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1}); err != nil {
		return LuaFigure{}, fmt.Errorf("bench: lua warm: %w", err)
	}
	defer func() {
		k := stock.KeysOf(item)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = rdb.Del(dctx, k.Stock, k.Meta, k.Holders, k.Reservations).Err()
	}()
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var calls, failed atomic.Int64
	var firstErr, firstFailure atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := int64(w + 1); rctx.Err() == nil; u += int64(concurrency) {
				res, err := st.Admit(rctx, stock.AdmitRequest{ItemID: item, UserID: u, Qty: 1, RequestID: reqid.New(item, time.Now()), Now: time.Now()})
				if err != nil {
					if rctx.Err() != nil {
						return
					}
					if errors.Is(err, stock.ErrUnavailable) {
						// One slow call on a shared machine says nothing
						// about the script's speed: count it and go on.
						failed.Add(1)
						firstFailure.CompareAndSwap(nil, err)
						continue
					}
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if res.Code != stock.SoldOut {
					firstErr.CompareAndSwap(nil, fmt.Errorf("bench: lua: verdict %q on an item with no stock", res.Code))
					return
				}
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return LuaFigure{}, err
	}
	if calls.Load() == 0 {
		err, _ := firstFailure.Load().(error)
		return LuaFigure{}, fmt.Errorf("bench: lua: no call answered in %v: %w", d, err)
	}
	el := time.Since(start).Seconds()
	return LuaFigure{Path: "sold_out", Concurrency: concurrency, Calls: calls.Load(), PerSec: float64(calls.Load()) / el, Failed: failed.Load()}, nil
}
