// Package histquantile estimates a quantile from a histogram's cumulative
// bucket counts the way Prometheus' histogram_quantile does, so a figure
// the bench tool or flashsalectl prints is the figure a dashboard shows for
// the same buckets.
//
// It owns no state. Importers: the bench tool and pkg/ctl. It imports nothing
// at all, not even the Prometheus client: it works on the bucket counts its
// callers scraped or were sent.
package histquantile
