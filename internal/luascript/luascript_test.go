package luascript

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestMust: a script is read from the owner's lua/ folder; a missing one
// panics naming the owner and the file (a build-time bug must not start).
func TestMust(t *testing.T) {
	fsys := fstest.MapFS{"lua/ok.lua": {Data: []byte("return 1")}}
	if s := Must(fsys, "pkgx", "ok.lua"); s.Hash() == "" {
		t.Fatal("no script")
	}
	defer func() {
		r := recover()
		if msg, _ := r.(string); !strings.Contains(msg, "pkgx") || !strings.Contains(msg, "gone.lua") {
			t.Fatalf("panic %v, want one naming pkgx and gone.lua", r)
		}
	}()
	Must(fsys, "pkgx", "gone.lua")
	t.Fatal("a missing script did not panic")
}
