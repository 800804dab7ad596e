package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
)

// assets holds what the HTML report inlines. The directory always embeds
// (its README is committed); echarts.min.js is there when the build ran
// deploy/local/report-deps.sh first, as make build and make test do.
//
//go:embed assets
var assets embed.FS

const echartsAsset = "assets/echarts.min.js"

// errNoECharts says the binary was built without the charting script.
var errNoECharts = errors.New("bench was built without " + echartsAsset + ": run deploy/local/report-deps.sh assets (make build does), then rebuild")

// echartsJS returns Apache ECharts' minified script, embedded at build time.
func echartsJS() ([]byte, error) {
	b, err := assets.ReadFile(echartsAsset)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoECharts
	}
	if err != nil {
		return nil, fmt.Errorf("bench: read %s: %w", echartsAsset, err)
	}
	return b, nil
}
