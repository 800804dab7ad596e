package testenv

import (
	"runtime"
	"strings"
)

// GoroutinesIn counts the goroutines whose stack holds every one of parts
// (a function as the stack names it, "admission.(*Service).awaitStock(",
// and a test's function literal to count only that test's): how many of a
// test's goroutines are blocked in a function, for a test that must act
// only once they all got there, or that checks they all ended.
func GoroutinesIn(parts ...string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	c := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if allIn(g, parts) {
			c++
		}
	}
	return c
}

func allIn(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
