package main

import (
	"context"
	"slices"
	"sync"
	"time"
)

// runFollowing is Run with long polls: as soon as a request is tracked (and
// every interval, for those that found no room) it starts a follower for
// each pending request not yet followed (at most maxFollowers at once;
// the rest wait for the next tick), until attackDone is closed and nothing
// is pending, or timeout has passed since attackDone, or ctx ends.
func (s *Settler) runFollowing(ctx context.Context, attackDone <-chan struct{}, interval, timeout time.Duration) {
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	sem := make(chan struct{}, maxFollowers)
	s.until(ctx, attackDone, interval, timeout, s.tracked, func() {
		for _, id := range s.unfollowed() {
			select {
			case sem <- struct{}{}:
			default:
				s.unfollow(id) // full: the next tick
				continue
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				s.follow(fctx, id, interval)
			}()
		}
	})
}

// unfollowed marks and returns the pending requests nobody follows, oldest
// first.
func (s *Settler) unfollowed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.pending {
		if !s.following[id] {
			s.following[id] = true
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (s *Settler) unfollow(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.following, id)
}

// follow long-polls id until it is terminal or ctx ends. A poll answered
// PENDING before interval passed (a server that ignores ?wait=, such as the
// baselines, or one with too many waiters) is followed by a pause, so
// following never becomes a busy loop.
func (s *Settler) follow(ctx context.Context, id string, interval time.Duration) {
	defer s.unfollow(id)
	for ctx.Err() == nil {
		start := time.Now()
		if s.poll(ctx, id) {
			return
		}
		if rest := interval - time.Since(start); rest > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(rest):
			}
		}
	}
}
