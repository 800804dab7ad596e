package waitroom

import "time"

// SetClock makes g tell time by now, in its own checks of the items' sale
// windows and in its gate moves (Store.WithClock), so a test steps
// the gate's time and counts exact admissions instead of waiting on the
// wall clock. Called before g's first pass.
func SetClock(g *Gate, now func() time.Time) {
	g.now = now
	g.wr = g.wr.WithClock(now)
}

// PlantedRead is a reader of a Room's waiting polls planted by a test in
// the state it stands in at some moment (its last read of the stock and
// the gate), with no goroutine reading for it: only the test moves it.
type PlantedRead struct {
	r  *Room
	id int64
	wi *watchedItem
}

// PlantAdmitRead plants item's reader of r as one that read stock left and
// serving position serving "just now" (its read stays fresh for an hour).
func PlantAdmitRead(r *Room, item, left, serving int64) *PlantedRead {
	wi := newWatchedItem()
	wi.stop = make(chan struct{})
	wi.read, wi.serving, wi.tickets, wi.leftOK, wi.left, wi.readAt = true, serving, serving, true, left, time.Now().Add(time.Hour)
	r.admits.mu.Lock()
	r.admits.items[item] = wi
	r.admits.mu.Unlock()
	return &PlantedRead{r: r, id: item, wi: wi}
}

// Fresh reports whether the room takes the planted read for a fresh one.
func (p *PlantedRead) Fresh() bool {
	_, ok := p.r.admits.fresh(p.id, p.r.cfg.WatchEvery*3/2)
	return ok
}

// Waiters is how many polls wait on the planted reader.
func (p *PlantedRead) Waiters() int {
	p.r.admits.mu.Lock()
	defer p.r.admits.mu.Unlock()
	return p.wi.refs
}

// Move is the gate's move to serving, as the reader would see it.
func (p *PlantedRead) Move(serving int64) {
	_, tickets, _, _ := p.wi.gateNow()
	p.wi.setGate(serving, max(serving, tickets), time.Now())
}

// Remove takes the planted reader away.
func (p *PlantedRead) Remove() {
	p.r.admits.mu.Lock()
	defer p.r.admits.mu.Unlock()
	if p.r.admits.items[p.id] == p.wi {
		delete(p.r.admits.items, p.id)
	}
}
