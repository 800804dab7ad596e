package reqid

import (
	"errors"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	for _, item := range []int64{1, 42, 9223372036854775807} {
		id := New(item, time.Now())
		got, err := Item(id)
		if err != nil || got != item {
			t.Fatalf("Item(%q) = %d, %v; want %d", id, got, err, item)
		}
		if len(id) > MaxLen {
			t.Fatalf("id %q longer than MaxLen", id)
		}
	}
}

func TestMalformed(t *testing.T) {
	for _, id := range []string{"", "abc", "1-", "-" + New(1, time.Now())[2:], "0-0000000000000000000000000000",
		"1-000000000000000000000000000g", "99999999999999999999-0000000000000000000000000000", "1-00"} {
		if _, err := Item(id); !errors.Is(err, ErrMalformed) {
			t.Errorf("Item(%q) err = %v, want ErrMalformed", id, err)
		}
	}
}

func FuzzItem(f *testing.F) {
	f.Add(New(7, time.Now()))
	f.Add("1-zz")
	f.Fuzz(func(t *testing.T, s string) {
		item, err := Item(s)
		if err == nil && item <= 0 {
			t.Fatalf("accepted %q with item %d", s, item)
		}
	})
}
