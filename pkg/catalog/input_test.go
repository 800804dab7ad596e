package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestSaleWindowYears: a sale time whose UTC form MySQL or the JSON encoder
// cannot hold is a 400 invalid_window, whatever its offset, and so is a
// window that does not start before it ends.
func TestSaleWindowYears(t *testing.T) {
	for _, tc := range []struct {
		starts, ends string
		ok           bool
	}{
		{"2020-01-01T00:00:00Z", "2999-12-31T00:00:00Z", true},
		{"1970-01-01T00:00:00+01:00", "1970-01-01T00:00:01+01:00", true},      // 1969 in UTC: still a DATETIME
		{"9998-12-31T23:59:58-23:59", "9998-12-31T23:59:59-23:59", true},      // 9999 in UTC
		{"9999-12-31T00:00:00Z", "9999-12-31T23:00:00Z", false},               // 9999 as written
		{"2020-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00", false},          // 10000 in UTC
		{"1969-12-31T23:59:59Z", "2020-01-01T00:00:00Z", false},               // before 1970
		{"0001-01-01T00:00:00Z", "2020-01-01T00:00:00Z", false},               // not a DATETIME
		{"2020-01-01T01:00:00+01:00", "2020-01-01T00:00:00Z", false},          // the same instant
		{"2020-01-01T00:00:00.0001Z", "2020-01-01T00:00:00.0002Z", true},      // before, by 100 µs
		{"2020-01-02T00:00:00Z", "2020-01-01T00:00:00Z", false},               // ends first
		{"2020-01-01T00:00:00-23:59", "2020-01-01T00:00:00+23:59", false},     // offsets count
		{"2020-01-01T00:00:00+23:59", "2020-01-01T00:00:00-23:59", true},      //
		{"1970-01-01T00:00:00Z", "9998-12-31T23:59:59.999999999-23:59", true}, // widest
	} {
		var b Input
		body := fmt.Sprintf(`{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":%q,"ends_at":%q}`, tc.starts, tc.ends)
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		_, err := b.Validate(1, 64)
		if tc.ok != (err == nil) {
			t.Errorf("%s .. %s: err %v, want ok=%v", tc.starts, tc.ends, err, tc.ok)
		}
		if ie, isIE := err.(*InvalidError); err != nil && (!isIE || ie.Code != "invalid_window") {
			t.Errorf("%s .. %s: %v, want invalid_window", tc.starts, tc.ends, err)
		}
	}
}

// TestSaleTimePatternMatchesServer: the year range that ingress/openapi.yaml
// gives SaleTime is exactly the one saleYear accepts, so the fuzzer's
// schema-valid times are accepted and its invalid ones refused.
func TestSaleTimePatternMatchesServer(t *testing.T) {
	raw, err := os.ReadFile("../../ingress/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Pattern string `yaml:"pattern"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	pat := doc.Components.Schemas["SaleTime"].Pattern
	if pat == "" {
		t.Fatal("components.schemas.SaleTime has no pattern")
	}
	re := regexp.MustCompile(pat)
	for y := 0; y <= 9999; y++ {
		for _, offset := range []string{"Z", "+23:59", "-23:59"} {
			s := fmt.Sprintf("%04d-06-15T12:00:00%s", y, offset)
			var ts struct{ T time.Time }
			if err := json.Unmarshal([]byte(`{"T":"`+s+`"}`), &ts); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			if got, want := re.MatchString(s), saleYear(ts.T); got != want {
				t.Fatalf("%s: pattern matches %v, server accepts %v", s, got, want)
			}
		}
	}
}

// TestStoredItemIsItsOwnBody: every item a valid body makes, given back as
// the body a PATCH merges into (inputOf) or as the queue a PUT without
// queue fields keeps (keepQueue), validates to the same item. The contract
// run found two ways a stored item refused itself (a shuffle window under
// the shortest round a body may name, through PATCH and then through PUT);
// this walks the queue settings' edges instead of waiting for a fuzzer.
func TestStoredItemIsItsOwnBody(t *testing.T) {
	starts := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	ends, opens := starts.Add(time.Hour), starts.Add(-time.Hour)
	ints := func(v ...int) []*int {
		out := []*int{nil}
		for i := range v {
			out = append(out, &v[i])
		}
		return out
	}
	name, price, stock, limit := "x", int64(0), int64(5), 1
	checked := 0
	for _, queue := range []bool{false, true} {
		for _, rate := range ints(1, 100, maxQueueRate) {
			for _, window := range ints(0, 1, 500, 999, 1000, 1001, 2500, maxShuffleWindowMs) {
				for _, round := range ints(minRoundMs, 1500, 2500, maxShuffleWindowMs) {
					q := queue
					b := Input{Name: &name, PriceCents: &price, Stock: &stock, PerUserLimit: &limit,
						StartsAt: &starts, EndsAt: &ends, Queue: &q, QueueOpensAt: &opens,
						QueueRate: rate, QueueShuffleWindowMs: window, QueueRoundMs: round}
					it, err := b.Validate(1, 64)
					if err != nil {
						t.Fatalf("%s: %v", show(b), err)
					}
					if again, err := inputOf(it).Validate(1, 64); err != nil || again != it {
						t.Errorf("%s as a PATCH's base: %+v, %v; want %+v", show(b), again, err, it)
					}
					if !it.Queue {
						continue
					}
					plain := Input{Name: &name, PriceCents: &price, Stock: &stock, PerUserLimit: &limit, StartsAt: &starts, EndsAt: &ends}
					if kept, err := keepQueue(plain, it).Validate(1, 64); err != nil || kept != it {
						t.Errorf("%s kept by a PUT without queue fields: %+v, %v; want %+v", show(b), kept, err, it)
					}
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no queued item was checked")
	}
}

// show is an Input's JSON, for a failure message.
func show(b Input) string {
	raw, _ := json.Marshal(b)
	return string(raw)
}
