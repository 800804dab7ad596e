package logsample

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Options configure a Handler.
type Options struct {
	// Burst is how many lines of one message pass per Window; 0 = no
	// sampling (every line passes).
	Burst int
	// Window is the period the Burst is counted over; default 1s.
	Window time.Duration
	// MinLevel is the lowest level sampled; default slog.LevelWarn.
	MinLevel slog.Level
}

// maxKeys bounds the sampler's memory: past it, messages not yet seen
// share one key (they are still bounded and counted, only together).
const maxKeys = 1024

// Handler is a slog.Handler that samples repeated lines (see the package
// doc). Handlers derived by WithAttrs and WithGroup share one budget.
type Handler struct {
	next slog.Handler
	s    *sampler
}

// New wraps next. With o.Burst <= 0 it returns next itself.
func New(next slog.Handler, o Options) slog.Handler {
	if o.Burst <= 0 {
		return next
	}
	if o.Window <= 0 {
		o.Window = time.Second
	}
	if o.MinLevel == 0 {
		o.MinLevel = slog.LevelWarn
	}
	return &Handler{next: next, s: &sampler{o: o, keys: map[key]*count{}, now: time.Now}}
}

type key struct {
	level slog.Level
	msg   string
}

// count is one message's lines in the current window.
type count struct {
	passed, dropped int
	// out is the handler the message was last written through: its
	// summary goes out with that handler's attributes (service, ...).
	out slog.Handler
}

type sampler struct {
	o     Options
	mu    sync.Mutex
	start time.Time // of the current window
	keys  map[key]*count
	timer *time.Timer // pending summary of a window with drops; nil = none
	now   func() time.Time
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler: it writes r, or counts it.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.s.o.MinLevel || h.s.admit(r.Level, r.Message, h.next) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(as), s: h.s}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), s: h.s}
}

// admit says whether a line of (level, msg) may be written now.
func (s *sampler) admit(level slog.Level, msg string, out slog.Handler) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.start) >= s.o.Window {
		s.flushLocked()
		s.start = now
	}
	k := key{level, msg}
	c, ok := s.keys[k]
	if !ok {
		if len(s.keys) >= maxKeys {
			k = key{level, "(other messages)"}
			if c = s.keys[k]; c == nil {
				c = &count{}
				s.keys[k] = c
			}
		} else {
			c = &count{}
			s.keys[k] = c
		}
	}
	c.out = out
	if c.passed < s.o.Burst {
		c.passed++
		return true
	}
	c.dropped++
	if s.timer == nil {
		// Nobody may log again for a while: say what was dropped when
		// the window ends, not at the next line.
		s.timer = time.AfterFunc(s.o.Window-now.Sub(s.start), s.flush)
	}
	return false
}

func (s *sampler) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	s.start = s.now()
}

// flushLocked writes one summary line per message that lost lines in the
// window, and starts a new window.
func (s *sampler) flushLocked() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	for k, c := range s.keys {
		if c.dropped > 0 {
			r := slog.NewRecord(s.now(), k.level, k.msg, 0)
			r.AddAttrs(slog.Int("suppressed", c.dropped), slog.Duration("window", s.o.Window))
			_ = c.out.Handle(context.Background(), r)
		}
	}
	clear(s.keys)
}
