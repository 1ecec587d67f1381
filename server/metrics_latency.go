package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Command latency histograms for Prometheus, from the per-command
// histograms of INFO latencystats (latency.go): the same samples (every
// 16th call of a connection, counted 16 times), regrouped into buckets of
// powers of two microseconds, 1 µs to 16.8 s. Commands never timed (or
// with latency-tracking off) have no series.

var mDuration = prometheus.NewDesc("turnstile_command_duration_seconds",
	"Command run time, sampled (every 16th call of a connection), by command.", []string{"command"}, nil)

// promBuckets are the upper bounds, µs: 1, 2, 4, ..., 2^24.
var promBuckets = func() []int64 {
	var b []int64
	for us := int64(1); us <= 1<<24; us <<= 1 {
		b = append(b, us)
	}
	return b
}()

func (m metricsCollector) describeLatency(ch chan<- *prometheus.Desc) { ch <- mDuration }

func (m metricsCollector) collectLatency(ch chan<- prometheus.Metric) {
	s := m.s
	for _, c := range s.table.All() {
		cs := &s.stats.cmds[c.ID()]
		h := cs.hist.Load()
		if h == nil {
			continue
		}
		counts, total := h.snapshot()
		if total == 0 {
			continue
		}
		buckets := make(map[float64]uint64, len(promBuckets))
		var run int64
		i := 0
		for _, le := range promBuckets {
			for i < len(counts) && latBucketMax(i) <= le {
				run += counts[i]
				i++
			}
			buckets[float64(le)/1e6] = uint64(run)
		}
		ch <- prometheus.MustNewConstHistogram(mDuration, uint64(total), float64(cs.usec.Load())/1e6, buckets, c.FullName())
	}
}
