package server

import "github.com/prometheus/client_golang/prometheus"

// Command latency histograms come with the latency tracking of INFO
// latencystats; until then there are none.
func (m metricsCollector) describeLatency(chan<- *prometheus.Desc) {}

func (m metricsCollector) collectLatency(chan<- prometheus.Metric) {}
