package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Version and Revision are set at link time by release builds (the
// Dockerfile does):
//
//	-ldflags "-X github.com/flashsale-dev/flashsale/pkg/buildinfo.Version=v1.2.0
//	          -X github.com/flashsale-dev/flashsale/pkg/buildinfo.Revision=<commit>"
//
// Left empty, they come from what the Go toolchain stamped into the binary:
// the module version ("(devel)" for a build in a checkout) and the VCS
// revision, with "-dirty" when the work tree had changes.
var (
	Version  string
	Revision string
)

// Info is one build's identity.
type Info struct {
	Version   string
	Revision  string
	GoVersion string
}

var (
	once sync.Once
	info Info
)

// Get returns this binary's build identity; fields never stamped read
// "unknown".
func Get() Info {
	once.Do(func() { info = read(Version, Revision, debug.ReadBuildInfo) })
	return info
}

func read(version, revision string, readBuild func() (*debug.BuildInfo, bool)) Info {
	in := Info{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if bi, ok := readBuild(); ok {
		if in.Version == "" {
			in.Version = bi.Main.Version
		}
		if in.Revision == "" {
			var rev string
			var dirty bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if rev != "" && dirty {
				rev += "-dirty"
			}
			in.Revision = rev
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
	}
	if in.Version == "" {
		in.Version = "unknown"
	}
	if in.Revision == "" {
		in.Revision = "unknown"
	}
	return in
}

// String is the -version line of command cmd.
func (i Info) String(cmd string) string {
	return fmt.Sprintf("%s %s (revision %s, %s)", cmd, i.Version, i.Revision, i.GoVersion)
}

// Collector is the flashsale_build_info gauge of deployable (ingress,
// consumer, reaper): always 1, the build in its labels, in the convention of
// Prometheus' own *_build_info metrics. The deployable label is set by the
// process, not by the scrape, so the alerts and the dashboard find each
// deployable by it under compose's job names and under Kubernetes' pod
// labels alike, and absent() can tell when one has no process left.
func Collector(deployable string) prometheus.Collector {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "flashsale_build_info",
		Help:        "Always 1; the labels say which flashsale build this process runs.",
		ConstLabels: prometheus.Labels{"deployable": deployable, "version": i.Version, "revision": i.Revision, "goversion": i.GoVersion},
	})
	g.Set(1)
	return g
}
