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

func TestBucketRoundTrip(t *testing.T) {
	for _, b := range []int{0, 1, 7, MaxBucket} {
		id := NewIn(42, b, time.Now())
		item, bucket, err := Parse(id)
		if err != nil || item != 42 || bucket != b || Bucket(id) != b {
			t.Fatalf("Parse(%q) = %d, %d, %v (Bucket %d); want 42, %d", id, item, bucket, err, Bucket(id), b)
		}
		if len(NewIn(9223372036854775807, b, time.Now())) > MaxLen {
			t.Fatalf("id of bucket %d longer than MaxLen", b)
		}
	}
	if b0 := NewIn(42, 0, time.Now()); b0[:3] != "42-" {
		t.Fatalf("bucket 0 id %q carries a bucket suffix; unbucketed ids must stay as they were", b0)
	}
	tail := New(1, time.Now())[2:]
	for _, id := range []string{"1.0-" + tail, "1.01-" + tail, "1.1000-" + tail, "1.-" + tail, "1.+3-" + tail, "1.x-" + tail, "+1-" + tail} {
		if _, _, err := Parse(id); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) err = %v, want ErrMalformed", id, err)
		}
	}
}
