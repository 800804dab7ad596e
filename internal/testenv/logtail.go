package testenv

import (
	"log/slog"
	"sync"
	"testing"
)

// logTailMax bounds what a LogTail keeps: the last lines are the ones that
// explain a failure.
const logTailMax = 64 << 10

// LogTail is a logger for a server under test whose warnings and errors are
// printed in the test's output only when the test fails, so a 503 that a
// test did not expect comes with the cause the server logged. It never
// calls the testing.T after the test (servers log from their goroutines
// until they are closed, past the test's end).
func LogTail(t testing.TB) *slog.Logger {
	b := &tailBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (warnings and errors, last %d KiB):\n%s", logTailMax>>10, b.String())
		}
	})
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - logTailMax; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
