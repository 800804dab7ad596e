package console_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// browser is one headless Chromium and what its tabs did that a test must
// see: script errors, and every URL they asked for.
type browser struct {
	ctx context.Context // the first tab's

	mu       sync.Mutex
	problems []string // exceptions and console errors, except failed fetches
	urls     []string // every request of every tab
	// open holds the URLs of the requests under way, by id; flights logs
	// each request's start and end, in order, for overlap.
	open    map[network.RequestID]string
	flights []flight
}

// flight is a request starting (start) or ending, of url.
type flight struct {
	url   string
	start bool
}

// newBrowser starts Chromium with the flags this machine needs (no
// sandbox: CI runs as root; no GPU; /dev/shm is small in containers) and
// a fresh profile. Every host name resolves to nothing, so a page that
// needed the network (a CDN) fails instead of quietly fetching it; the
// ingress is reached by its IP literal, the one exclusion (the rule maps IP
// literals too).
func newBrowser(t *testing.T, timeout time.Duration) *browser {
	t.Helper()
	dir := t.TempDir() // removed after the browser has stopped (cleanups run last first)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testenv.Chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 1400),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	b := &browser{ctx: ctx, open: map[network.RequestID]string{}}
	start := time.Now()
	b.watch(t, ctx)
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	return b
}

// tab opens another tab of the browser: a session of its own
// (sessionStorage is per tab).
func (b *browser) tab(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	b.watch(t, ctx)
	return ctx
}

// watch records ctx's tab's exceptions, console errors and requests.
func (b *browser) watch(t *testing.T, ctx context.Context) {
	t.Helper()
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+exceptionText(ev.ExceptionDetails))
		case *log.EventEntryAdded:
			// A refused fetch (401, 403) is logged as a network error:
			// expected, and the page shows it itself.
			if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
				b.problems = append(b.problems, fmt.Sprintf("console %s: %s", ev.Entry.Source, ev.Entry.Text))
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				b.problems = append(b.problems, fmt.Sprintf("console.%s called", ev.Type))
			}
		case *network.EventRequestWillBeSent:
			b.urls = append(b.urls, ev.Request.URL)
			b.open[ev.RequestID] = ev.Request.URL
			b.flights = append(b.flights, flight{url: ev.Request.URL, start: true})
		case *network.EventLoadingFinished:
			b.ended(ev.RequestID)
		case *network.EventLoadingFailed:
			b.ended(ev.RequestID)
		}
	})
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
}

// ended logs the end of request id, if it was seen starting. Called with
// b.mu held.
func (b *browser) ended(id network.RequestID) {
	if u, ok := b.open[id]; ok {
		delete(b.open, id)
		b.flights = append(b.flights, flight{url: u})
	}
}

// quiet is the present point of the request log, for overlap, and
// whether no request whose URL contains part is under way.
func (b *browser) quiet(part string) (mark int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.open {
		if strings.Contains(u, part) {
			return len(b.flights), false
		}
	}
	return len(b.flights), true
}

// overlap is the most requests whose URL contains part that were under
// way at once at any point from mark on (those already under way at mark
// count).
func (b *browser) overlap(part string, mark int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, most := 0, 0
	for i, f := range b.flights {
		if !strings.Contains(f.url, part) {
			continue
		}
		if f.start {
			n++
		} else {
			n--
		}
		if i >= mark {
			most = max(most, n)
		}
	}
	return most
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "?"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (line %d)", s, d.LineNumber)
}

// requests counts the requests whose URL contains part, in every tab.
func (b *browser) requests(part string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, u := range b.urls {
		if strings.Contains(u, part) {
			n++
		}
	}
	return n
}

// check fails t if a tab threw, logged an error (a CSP refusal is one), or
// asked for anything but origin.
func (b *browser) check(t *testing.T, origin string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("page: %s", p)
	}
	for _, u := range b.urls {
		if !strings.HasPrefix(u, origin+"/") {
			t.Errorf("page asked for %s, outside %s", u, origin)
		}
	}
	if len(b.urls) == 0 {
		t.Errorf("no request was seen: the check of the page's requests saw nothing")
	}
}

// do runs actions in ctx's tab, failing t on an error.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("chromium: %s: %v", what, err)
	}
}

// eval evaluates a script in ctx's tab and decodes its result.
func eval[T any](t *testing.T, ctx context.Context, script string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script))
	if err != nil {
		t.Fatalf("chromium: evaluate %.60q: %v", script, err)
	}
	return v
}

// poll waits until script is truthy in ctx's tab and returns its value.
func poll[T any](t *testing.T, ctx context.Context, what, script string, timeout time.Duration) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](script, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		t.Fatalf("chromium: waiting %v for %s: %v", timeout, what, err)
	}
	return v
}
