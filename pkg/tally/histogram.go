package tally

import "time"

// Bounds are the upper bounds, in seconds, of the 202 latency histogram.
// They are fixed (the live contract lists them) so that the counts of every
// replica add up bucket by bucket in one Redis hash, and a client can take
// the difference of two reads without knowing who wrote them.
var Bounds = [...]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// nBuckets is the bounds and the +Inf bucket.
const nBuckets = len(Bounds) + 1

// bucketOf returns the index of the first bound at or above d, or
// len(Bounds) (+Inf) past the last: a linear walk, as 12 comparisons cost
// less than a binary search's branches.
func bucketOf(d time.Duration) int {
	s := d.Seconds()
	for i, b := range Bounds {
		if s <= b {
			return i
		}
	}
	return len(Bounds)
}

// Histogram is a latency histogram as the API shows it: cumulative counts,
// as Prometheus does, so a percentile is the first bucket whose count
// reaches the rank.
type Histogram struct {
	// Count counts every observation (the +Inf bucket).
	Count      int64    `json:"count"`
	SumSeconds float64  `json:"sum_seconds"`
	Buckets    []Bucket `json:"buckets"`
}

// Bucket is one bound of a Histogram and the observations at or under it.
type Bucket struct {
	LE    float64 `json:"le"`
	Count int64   `json:"count"`
}

// histogram turns per-bucket counts (the last is +Inf) and a sum in
// microseconds into the cumulative form.
func histogram(per [nBuckets]int64, sumMicros int64) Histogram {
	h := Histogram{SumSeconds: float64(sumMicros) / 1e6, Buckets: make([]Bucket, len(Bounds))}
	var run int64
	for i, b := range Bounds {
		run += per[i]
		h.Buckets[i] = Bucket{LE: b, Count: run}
	}
	h.Count = run + per[len(Bounds)]
	return h
}
