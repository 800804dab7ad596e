package testenv

import (
	"bytes"
	"sync"
)

// LogBuffer is a log sink that a component's goroutines write while the
// test reads it: a bytes.Buffer behind a mutex, for slog handlers in tests
// that assert what was logged.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
