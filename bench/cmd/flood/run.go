package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// result is what one policy's run measured.
type result struct {
	policy  string
	crashed bool   // the server exited during the run
	failure string // why the run could not be measured (empty: it was)

	// The flood.
	duration  time.Duration // from the first flood command to the last reply
	timedOut  bool          // the time cap ended the flood before every key was sent
	sent      int64         // flood commands answered
	throttles int64
	sets      int64
	oom       int64
	other     int64
	floodErrs string

	// The server, from INFO at the end, and RSS over the run.
	maxmem      int64
	usedMemory  int64
	evicted     int64
	expired     int64
	dbsize      int64
	maxRSS      int64
	maxRSSAfter int64         // max RSS from the moment the limit was first reached
	limitAt     time.Duration // when the limit was first reached (-1: never)
	series      []sample

	// The hot limited clients.
	hotKeys      int
	hotSent      int64
	hotAllowed   int64
	hotLimited   int64
	hotOOM       int64
	hotErrs      int64
	hotErrText   string
	hotBound     int64 // the most a key may be allowed over the median key's elapsed time
	forgiven     int64 // allowed beyond each key's bound, summed
	hotEvicted   int   // hot keys seen evicted at least once
	hotEvictions int64 // resets seen, over all hot keys

	// The probe.
	probes        int
	probeMax      time.Duration
	probeP99      time.Duration
	stalls        int // probes slower than cfg.stall
	probeMisses   int64
	probeErrs     int64
	probeErrText  string
	clientsStopAt time.Duration
}

// runPolicy starts a fresh server with policy and runs the flood, the hot
// clients, the probe and the samplers against it.
func runPolicy(cfg *config, policy, logPath string) result {
	res := result{policy: policy, limitAt: -1}
	srv, err := startServer(cfg.bin, cfg.maxmem, policy, cfg.extra, logPath)
	if err != nil {
		res.failure = err.Error()
		return res
	}
	defer func() {
		if srv.stop() && !res.crashed {
			res.crashed = true
		}
	}()
	if res.maxmem, res.failure = prepare(srv.addr); res.failure != "" {
		return res
	}

	start := time.Now()
	deadline := start.Add(cfg.timeCap)
	floodCtx, stopFlood := context.WithCancel(context.Background())
	defer stopFlood()
	clientCtx, stopClients := context.WithCancel(context.Background())
	defer stopClients()
	go func() { // a server that dies ends the run at once
		select {
		case <-srv.exited:
			stopFlood()
		case <-floodCtx.Done():
		}
	}()

	var clients sync.WaitGroup
	var watch memWatch
	clients.Go(func() { pollInfo(clientCtx, srv.addr, 500*time.Millisecond, &watch) })
	var fs floodStats
	clients.Go(func() {
		sampleRSS(clientCtx, srv.pid(), start, cfg.sampleEvery, res.maxmem, &watch, &fs, &res.series, &res.limitAt)
	})
	var ps probeStats
	clients.Go(func() { probe(clientCtx, srv.addr, cfg, &ps) })
	hotKeys := make([]*hotKey, cfg.hot)
	for i := range hotKeys {
		hotKeys[i] = &hotKey{name: fmt.Sprintf("hot:%d", i), prevRem: -1}
	}
	var hotErrs errLog
	for c := range cfg.hotConns {
		var mine []*hotKey
		for i := c; i < len(hotKeys); i += cfg.hotConns {
			mine = append(mine, hotKeys[i])
		}
		if len(mine) > 0 {
			clients.Go(func() { hot(clientCtx, srv.addr, cfg, mine, &hotErrs) })
		}
	}

	var flooders sync.WaitGroup
	var next atomic.Int64
	for range cfg.floodConns {
		flooders.Go(func() { flood(floodCtx, srv.addr, cfg, &next, start, deadline, &fs) })
	}
	flooders.Wait()
	res.duration = time.Since(start)
	res.timedOut = next.Load() < cfg.keys && !time.Now().Before(deadline)
	// The other clients keep going a little after the flood, so that a
	// stall at its very end is seen too.
	sleepUntil(context.Background(), time.Now().Add(cfg.tail))
	stopClients()
	clients.Wait()
	res.clientsStopAt = time.Since(start)
	res.crashed = srv.gone()

	res.sent, res.throttles, res.sets = fs.sent.Load(), fs.throttles.Load(), fs.sets.Load()
	res.oom, res.other, res.floodErrs = fs.oom.Load(), fs.other.Load(), fs.errs.String()

	res.hotKeys = len(hotKeys)
	var elapsed []time.Duration
	for _, k := range hotKeys {
		res.hotSent += k.sent
		res.hotAllowed += k.allowed
		res.hotLimited += k.limited
		res.hotOOM += k.oom
		res.hotErrs += k.errs
		res.hotEvictions += k.evictions
		if k.evictions > 0 {
			res.hotEvicted++
		}
		if k.sent > 0 {
			e := k.last.Sub(k.first)
			elapsed = append(elapsed, e)
			res.forgiven += max(0, k.allowed-cfg.hotQuota.maxAllowed(e))
		}
	}
	if len(elapsed) > 0 {
		slices.Sort(elapsed)
		res.hotBound = cfg.hotQuota.maxAllowed(elapsed[len(elapsed)/2])
	}
	res.hotErrText = hotErrs.String()

	slices.Sort(ps.lat)
	res.probes = len(ps.lat)
	if n := len(ps.lat); n > 0 {
		res.probeMax = ps.lat[n-1]
		res.probeP99 = percentile(ps.lat, 99)
		i, _ := slices.BinarySearch(ps.lat, cfg.stall+1)
		res.stalls = n - i
	}
	res.probeMisses, res.probeErrs, res.probeErrText = ps.misses, ps.errs, ps.errLog.String()

	for _, s := range res.series {
		res.maxRSS = max(res.maxRSS, s.rss)
		if res.limitAt >= 0 && s.t >= res.limitAt {
			res.maxRSSAfter = max(res.maxRSSAfter, s.rss)
		}
	}

	if res.crashed {
		return res
	}
	// A fresh connection for the final figures: the set-up one sat idle
	// through the flood.
	end, err := dial(srv.addr)
	if err != nil {
		res.failure = "after the flood: " + err.Error()
		return res
	}
	defer end.close()
	if m, err := info(end, "memory"); err == nil {
		res.usedMemory = infoInt(m, "used_memory")
	}
	if m, err := info(end, "stats"); err == nil {
		res.evicted, res.expired = infoInt(m, "evicted_keys"), infoInt(m, "expired_keys")
	}
	if r, err := end.do(5*time.Second, "DBSIZE"); err == nil && r.typ == ':' {
		res.dbsize = r.num
	}
	return res
}

// prepare sets the probe key on a fresh server and returns its maxmemory
// in bytes, or why it could not.
func prepare(addr string) (maxmem int64, failure string) {
	c, err := dial(addr)
	if err != nil {
		return 0, err.Error()
	}
	defer c.close()
	r, err := c.do(5*time.Second, "SET", "probe", "probe-value")
	if err != nil {
		return 0, "SET probe before the flood: " + err.Error()
	}
	if r.typ != '+' {
		failure = "SET probe before the flood: " + r.str
		if m, err := info(c, "memory"); err == nil {
			failure += fmt.Sprintf(" (the fresh server's used_memory %s, used_memory_startup %s, maxmemory %s)",
				m["used_memory"], m["used_memory_startup"], m["maxmemory"])
		}
		return 0, failure
	}
	m, err := info(c, "memory")
	if err != nil {
		return 0, "INFO memory: " + err.Error()
	}
	return infoInt(m, "maxmemory"), ""
}
