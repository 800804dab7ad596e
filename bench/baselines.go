package main

import (
	"fmt"
	"strings"
)

// baselineLetters maps the letters -baselines accepts to the baselines'
// report names, in the order -compare runs them.
var baselineLetters = []struct {
	letter string
	name   string
}{
	{"a", BaselineA},
	{"b", BaselineB},
	{"c", BaselineC},
}

// parseBaselines reads -baselines ("a", "b", "a,b"; spaces and repeats are
// tolerated) into the report names of the baselines to run, in run order.
// Choosing is what makes a large-stock comparison possible at all: baseline
// (b) writes about 50 orders/s there and would take a quarter of an hour.
func parseBaselines(v string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		known := false
		for _, b := range baselineLetters {
			known = known || b.letter == f
		}
		if !known {
			return nil, fmt.Errorf("unknown baseline %q", f)
		}
		want[f] = true
	}
	var names []string
	for _, b := range baselineLetters {
		if want[b.letter] {
			names = append(names, b.name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no baseline named")
	}
	return names, nil
}

// skippedBaselines are the baselines -compare did not run, for the report.
func skippedBaselines(run []string) []string {
	var out []string
	for _, b := range baselineLetters {
		found := false
		for _, r := range run {
			found = found || r == b.name
		}
		if !found {
			out = append(out, b.name)
		}
	}
	return out
}
