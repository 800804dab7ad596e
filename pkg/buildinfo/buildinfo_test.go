package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func stamped(version string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
	return func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: version}, Settings: settings}, true
	}
}

func TestReadPrefersLinkTimeValues(t *testing.T) {
	got := read("v1.2.0", "abc123", stamped("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "fff"}))
	if got.Version != "v1.2.0" || got.Revision != "abc123" || got.GoVersion != "go1.26.8" {
		t.Fatalf("got %+v, want the -X values", got)
	}
}

func TestReadFallsBackToTheToolchainsStamp(t *testing.T) {
	got := read("", "", stamped("(devel)",
		debug.BuildSetting{Key: "vcs.revision", Value: "0123abcd"},
		debug.BuildSetting{Key: "vcs.modified", Value: "true"}))
	if got.Version != "(devel)" || got.Revision != "0123abcd-dirty" {
		t.Fatalf("got %+v, want (devel) and 0123abcd-dirty", got)
	}
}

func TestReadWithoutAnyStampSaysUnknown(t *testing.T) {
	got := read("", "", func() (*debug.BuildInfo, bool) { return nil, false })
	if got.Version != "unknown" || got.Revision != "unknown" || got.GoVersion == "" {
		t.Fatalf("got %+v, want unknown version and revision and the runtime's Go", got)
	}
}

// The deployable label is what the alerts and dashboard select a deployable
// by: compose's job names and Kubernetes' pod labels differ, the process's own
// label does not.
func TestCollectorExportsOneSeriesWithTheBuildInItsLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector("reaper"))
	i := Get()
	want := `# HELP flashsale_build_info Always 1; the labels say which flashsale build this process runs.
# TYPE flashsale_build_info gauge
flashsale_build_info{deployable="reaper",goversion="` + i.GoVersion + `",revision="` + i.Revision + `",version="` + i.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "flashsale_build_info"); err != nil {
		t.Fatal(err)
	}
}
