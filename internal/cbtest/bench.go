package cbtest

import (
	"slices"
	"testing"
	"time"
)

// ReportPercentiles reports the median and 99th percentile of lat, in milliseconds, as the
// benchmark's p50-ms and p99-ms.
func ReportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(float64(len(lat)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
