package server

import (
	"math"
	"strconv"
)

// The operability rows of the configuration table (config_params.go lists
// them): all can change at run time.
var (
	slowlogSlowerThanRow = row("slowlog-log-slower-than", "log commands that run this many microseconds or longer (-1: none; 0: all)",
		func(c *Config) *int64 { return &c.Ops.SlowlogSlowerThan }, integer[int64](-1, math.MaxInt64)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.ops.slow.threshold.Load(), 10) },
			func(s *Server, c *Config) {
				s.ops.slow.threshold.Store(c.Ops.SlowlogSlowerThan)
				s.updateTimeAll()
			})
	slowlogMaxLenRow = row("slowlog-max-len", "most entries the slow log keeps",
		func(c *Config) *int64 { return &c.Ops.SlowlogMaxLen }, integer[int64](0, math.MaxInt64)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.ops.slow.maxLen.Load(), 10) },
			func(s *Server, c *Config) { s.ops.slow.maxLen.Store(c.Ops.SlowlogMaxLen) })
	latencyMonitorThresholdRow = row("latency-monitor-threshold", "milliseconds from which LATENCY records an event (0: off)",
		func(c *Config) *int64 { return &c.Ops.LatencyMonitorThreshold }, integer[int64](0, math.MaxInt64)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.ops.latency.threshold.Load(), 10) },
			func(s *Server, c *Config) {
				s.ops.latency.threshold.Store(c.Ops.LatencyMonitorThreshold)
				s.updateTimeAll()
			})
	latencyTrackingRow = row("latency-tracking", "yes|no: per-command latency histograms (INFO latencystats, LATENCY HISTOGRAM)",
		func(c *Config) *bool { return &c.Ops.LatencyTracking }, yesNoCodec).
		mutable(func(s *Server) string { return yesNo(s.ops.latencyTracking.Load()) },
			func(s *Server, c *Config) { s.ops.latencyTracking.Store(c.Ops.LatencyTracking) })
)
