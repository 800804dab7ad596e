package orderlog

import (
	"errors"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

func TestRoundTrip(t *testing.T) {
	m := OrderMessage{RequestID: reqid.New(5, time.Now()), ItemID: 5, UserID: 9, Qty: 1, ReservedMs: 123}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	m.V = MessageVersion
	if got != m {
		t.Fatalf("got %+v want %+v", got, m)
	}
	if string(m.Key()) != "5" {
		t.Fatalf("key %q", m.Key())
	}
}

func TestPoison(t *testing.T) {
	rid := reqid.New(5, time.Now())
	for name, in := range map[string]string{
		"not json":      `{`,
		"version":       `{"v":2,"request_id":"` + rid + `","item_id":5,"user_id":1,"qty":1}`,
		"no version":    `{"request_id":"` + rid + `","item_id":5,"user_id":1,"qty":1}`,
		"unknown field": `{"v":1,"request_id":"` + rid + `","item_id":5,"user_id":1,"qty":1,"x":1}`,
		"item mismatch": `{"v":1,"request_id":"` + rid + `","item_id":6,"user_id":1,"qty":1}`,
		"bad rid":       `{"v":1,"request_id":"x","item_id":5,"user_id":1,"qty":1}`,
		"qty":           `{"v":1,"request_id":"` + rid + `","item_id":5,"user_id":1,"qty":0}`,
		"user":          `{"v":1,"request_id":"` + rid + `","item_id":5,"user_id":0,"qty":1}`,
	} {
		if _, err := Decode([]byte(in)); !errors.Is(err, ErrPoison) {
			t.Errorf("%s: err = %v, want ErrPoison", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	b, _ := OrderMessage{RequestID: reqid.New(5, time.Now()), ItemID: 5, UserID: 9, Qty: 1}.Encode()
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := Decode(in)
		if err != nil {
			return
		}
		out, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(out)
		if err != nil || again != m {
			t.Fatalf("round trip changed %+v into %+v (%v)", m, again, err)
		}
	})
}
