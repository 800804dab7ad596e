package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
)

// assets holds what the HTML report inlines: echarts.min.js is committed
// with its licence (bench/assets/README.md), so every build embeds it.
//
//go:embed assets
var assets embed.FS

const echartsAsset = "assets/echarts.min.js"

// errNoECharts says the binary was built without the charting script.
var errNoECharts = errors.New("bench was built without " + echartsAsset + ": restore it with git checkout bench/assets, then rebuild")

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
