package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prometheus metrics (turnstile-metrics-addr): one collector reads the
// counters the server keeps anyway (INFO's), at scrape time, so metrics
// cost the command path nothing beyond those counters. Every name starts
// with turnstile_. The registry is the server's own (no global state).

// metricsCollector is the server seen as Prometheus metrics.
type metricsCollector struct{ s *Server }

var (
	mCommands = prometheus.NewDesc("turnstile_commands_total",
		"Commands that ran, by command.", []string{"command"}, nil)
	mCommandErrors = prometheus.NewDesc("turnstile_command_errors_total",
		"Commands answered with an error: rejected before running (arity, auth, OOM...) or failed while running.",
		[]string{"command", "kind"}, nil)
	mDecisions = prometheus.NewDesc("turnstile_limiter_decisions_total",
		"Decisions of the limiter commands (CL.THROTTLE, RL.*), by command and decision.", []string{"command", "decision"}, nil)
	mPolicy = prometheus.NewDesc("turnstile_policy_decisions_total",
		"RL.CHECK decisions by named rule: allowed, denied, or denied in shadow mode (not enforced).",
		[]string{"policy", "decision"}, nil)
	mKeys         = prometheus.NewDesc("turnstile_keys", "Keys by database.", []string{"db"}, nil)
	mExpired      = prometheus.NewDesc("turnstile_expired_keys_total", "Keys removed because their TTL ran out.", nil, nil)
	mEvicted      = prometheus.NewDesc("turnstile_evicted_keys_total", "Keys evicted at maxmemory.", nil, nil)
	mMemory       = prometheus.NewDesc("turnstile_memory_used_bytes", "used_memory: what maxmemory is compared with.", nil, nil)
	mMemoryMax    = prometheus.NewDesc("turnstile_memory_max_bytes", "maxmemory (0: none).", nil, nil)
	mClients      = prometheus.NewDesc("turnstile_connected_clients", "Open client connections.", nil, nil)
	mConns        = prometheus.NewDesc("turnstile_connections_total", "Connections accepted.", nil, nil)
	mRejected     = prometheus.NewDesc("turnstile_rejected_connections_total", "Connections refused (maxclients, protected mode).", nil, nil)
	mDirty        = prometheus.NewDesc("turnstile_changes_since_last_save", "Writes since the last snapshot.", nil, nil)
	mLastSave     = prometheus.NewDesc("turnstile_last_save_timestamp_seconds", "Unix time of the last successful snapshot.", nil, nil)
	mLastSaveOK   = prometheus.NewDesc("turnstile_last_save_ok", "1 if the last background save succeeded, 0 if it failed.", nil, nil)
	mAOF          = prometheus.NewDesc("turnstile_aof_enabled", "1 while the append-only log is on.", nil, nil)
	mUptime       = prometheus.NewDesc("turnstile_uptime_seconds", "Seconds since the server started.", nil, nil)
	mHotkeysOn    = prometheus.NewDesc("turnstile_hotkeys_enabled", "1 while limiter calls are counted for RL.HOTKEYS.", nil, nil)
	metricsByDesc = []*prometheus.Desc{mCommands, mCommandErrors, mDecisions, mPolicy, mKeys, mExpired, mEvicted,
		mMemory, mMemoryMax, mClients, mConns, mRejected, mDirty, mLastSave, mLastSaveOK, mAOF, mUptime, mHotkeysOn}
)

func (m metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range metricsByDesc {
		ch <- d
	}
	m.describeLatency(ch)
}

func (m metricsCollector) Collect(ch chan<- prometheus.Metric) {
	s := m.s
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, c := range s.table.All() {
		cs := &s.stats.cmds[c.ID()]
		name := c.FullName()
		if n := cs.calls.Load(); n > 0 {
			counter(mCommands, n, name)
		}
		if n := cs.rejected.Load(); n > 0 {
			counter(mCommandErrors, n, name, "rejected")
		}
		if n := cs.failed.Load(); n > 0 {
			counter(mCommandErrors, n, name, "failed")
		}
		ls := &s.stats.limits[c.ID()]
		if a, d := ls.allowed.Load(), ls.denied.Load(); a+d > 0 {
			counter(mDecisions, a, name, "allowed")
			counter(mDecisions, d, name, "denied")
		}
	}
	s.rl.stats.Range(func(k, v any) bool {
		st := v.(*ruleStats)
		id := k.(string)
		counter(mPolicy, st.allowed.Load(), id, "allowed")
		counter(mPolicy, st.denied.Load(), id, "denied")
		counter(mPolicy, st.shadowDenied.Load(), id, "shadow_denied")
		return true
	})
	for i, db := range s.dbs {
		if n := db.Len(); n > 0 || i == 0 {
			gauge(mKeys, n, strconv.Itoa(i))
		}
	}
	counter(mExpired, s.expiredKeys())
	counter(mEvicted, s.evictedKeys())
	gauge(mMemory, s.usedMemory())
	gauge(mMemoryMax, s.mem.max.Load())
	gauge(mClients, int64(s.Clients()))
	counter(mConns, s.stats.totalConns.Load())
	counter(mRejected, s.stats.rejectedConns.Load())
	p := &s.persist
	gauge(mDirty, s.dirty.Load())
	gauge(mLastSave, p.lastSave.Load())
	gauge(mLastSaveOK, int64(boolInt(p.lastSaveOK.Load())))
	gauge(mAOF, int64(boolInt(p.aofOn.Load())))
	gauge(mUptime, (s.clock.Now()-s.start)/1e9)
	gauge(mHotkeysOn, int64(boolInt(s.hot.on.Load())))
	m.collectLatency(ch)
}

// MetricsHandler serves the server's metrics in Prometheus's format.
func (s *Server) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(metricsCollector{s})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: nil})
}

// serveMetrics serves /metrics on addr until the server closes. A bad
// address is an error at start-up.
func (s *Server) serveMetrics(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.MetricsHandler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.metricsAddr.Store(ln.Addr().String())
	go func() {
		<-s.stop
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	}()
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics server stopped", "addr", addr, "err", err)
		}
	}()
	s.log.Info("serving Prometheus metrics", "addr", ln.Addr().String(), "path", "/metrics")
	return nil
}
