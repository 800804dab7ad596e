package waitroom

import "container/heap"

// posWaiters is the long polls of an item waiting for the gate to reach
// their positions, nearest first (a min-heap): a move of the gate wakes
// the polls it reached and leaves the others asleep. Waking every poll on
// every move (every gate pass, 100 ms) made each of thousands of
// goroutines take the reader's lock only to find it still waits, on the
// ingress's CPU just as the first admissions are answered; the pages gain
// nothing from it, since a poll that is not admitted answers only at its
// deadline. Neither an admission nor a sell-out waits for this: the first
// is the wake itself, the second closes the item's sold channel, which
// every poll selects on. Not safe for concurrent use: the watchedItem's
// lock guards it.
type posWaiters []*posWaiter

// posWaiter is one poll's wait.
type posWaiter struct {
	pos     int64
	reached chan struct{} // closed when the gate reaches pos
	index   int           // in the heap; -1 once woken or removed
}

// add registers a poll waiting for pos.
func (h *posWaiters) add(pos int64) *posWaiter {
	w := &posWaiter{pos: pos, reached: make(chan struct{})}
	heap.Push(h, w)
	return w
}

// remove forgets w, if it still waits.
func (h *posWaiters) remove(w *posWaiter) {
	if w.index >= 0 {
		heap.Remove(h, w.index)
	}
}

// wakeTo wakes every poll waiting for a position up to serving.
func (h *posWaiters) wakeTo(serving int64) {
	for h.Len() > 0 && (*h)[0].pos <= serving {
		close(heap.Pop(h).(*posWaiter).reached)
	}
}

func (h posWaiters) Len() int           { return len(h) }
func (h posWaiters) Less(i, j int) bool { return h[i].pos < h[j].pos }
func (h posWaiters) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *posWaiters) Push(x any) {
	w := x.(*posWaiter)
	w.index = len(*h)
	*h = append(*h, w)
}

func (h *posWaiters) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.index = -1
	*h = old[:n-1]
	return w
}
