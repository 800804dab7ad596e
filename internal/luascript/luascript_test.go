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

// TestSetMust: every script a Set makes is one its Load loads, in the order
// made; the Set names its owner in a missing script's panic as Must does.
func TestSetMust(t *testing.T) {
	fsys := fstest.MapFS{"lua/a.lua": {Data: []byte("return 1")}, "lua/b.lua": {Data: []byte("return 2")}}
	s := NewSet(fsys, "pkgx")
	a, b := s.Must("a.lua"), s.Must("b.lua")
	if len(s.scripts) != 2 || s.scripts[0] != a || s.scripts[1] != b {
		t.Fatalf("set holds %v, want [a b]", s.scripts)
	}
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "pkgx") {
			t.Fatalf("panic %q, want one naming pkgx", msg)
		}
	}()
	s.Must("gone.lua")
	t.Fatal("a missing script did not panic")
}
