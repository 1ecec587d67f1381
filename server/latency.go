package server

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/command"
)

// The latency monitor (LATENCY LATEST|HISTORY|RESET|DOCTOR) and the
// per-command latency histograms (LATENCY HISTOGRAM, INFO latencystats).
//
// The monitor keeps, per event, the last latencyHistoryLen seconds in which
// the event took latency-monitor-threshold milliseconds or longer (the
// highest of each second), and the highest ever. Events: "command" and
// "fast-command" (a command's run, by its fast flag), "expire-cycle" (a
// slice of active expiry), "eviction-cycle" (one eviction round at
// maxmemory), "aof-write" and "aof-fsync-always" (the append-only log's
// group commit: LogConfig.Latency). Samples are added only when the threshold is on and reached,
// so its mutex is taken only then.
//
// The histograms are log-linear, four sub-buckets per power of two of the
// microseconds, so a percentile is exact to within a quarter of its power of
// two. Each command's histogram is made on its first timed call and fed with
// one atomic add; no lock.

const latencyHistoryLen = 160

// latencyEvents is the monitor. threshold (ms) is read without the lock;
// events is guarded by mu.
type latencyEvents struct {
	threshold atomic.Int64
	mu        sync.Mutex
	events    map[string]*latencyEvent
}

// latencyEvent is one event's samples: a ring of the newest seconds.
type latencyEvent struct {
	samples      [latencyHistoryLen]latencySample
	next         int // where the next sample goes
	n            int // samples held
	max          int64
	lastT, lastV int64
}

type latencySample struct{ unix, ms int64 }

// add records that event took ms milliseconds at unix (seconds), if the
// monitor is on and ms reaches its threshold.
func (l *latencyEvents) add(event string, unix, ms int64) {
	if th := l.threshold.Load(); th <= 0 || ms < th {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.events == nil {
		l.events = make(map[string]*latencyEvent)
	}
	e := l.events[event]
	if e == nil {
		e = &latencyEvent{}
		l.events[event] = e
	}
	e.max = max(e.max, ms)
	e.lastT, e.lastV = unix, ms
	if e.n > 0 {
		prev := &e.samples[(e.next+latencyHistoryLen-1)%latencyHistoryLen]
		if prev.unix == unix { // one sample a second: its highest
			prev.ms = max(prev.ms, ms)
			return
		}
	}
	e.samples[e.next] = latencySample{unix, ms}
	e.next = (e.next + 1) % latencyHistoryLen
	e.n = min(e.n+1, latencyHistoryLen)
}

// history returns event's samples, oldest first.
func (e *latencyEvent) history() []latencySample {
	out := make([]latencySample, 0, e.n)
	for i := range e.n {
		out = append(out, e.samples[(e.next-e.n+i+2*latencyHistoryLen)%latencyHistoryLen])
	}
	return out
}

// latencySince adds a sample of event for the time elapsed since start,
// when the monitor is on: the background cycles call it.
func (s *Server) latencySince(event string, start time.Time) {
	if s.ops.latency.threshold.Load() <= 0 {
		return
	}
	s.ops.latency.add(event, s.clock.Now()/1e9, time.Since(start).Milliseconds())
}

// logLatency is the append-only log's LogConfig.Latency: its aof-write and
// aof-fsync-always events.
func (s *Server) logLatency(event string, d time.Duration) {
	if s.ops.latency.threshold.Load() > 0 {
		s.ops.latency.add(event, s.clock.Now()/1e9, d.Milliseconds())
	}
}

func latencyCommands() []*Command {
	const f = command.Admin | command.NoScript | command.Loading | command.Stale
	return []*Command{
		{Name: "latency", NotCats: command.CatAdmin | command.CatDangerous, Arity: -2, Flags: f, Group: "server", Since: "2.8.13",
			Summary: "A container for latency diagnostics commands.", Subs: []*Command{
				{Name: "doctor", Arity: 2, Flags: f, Since: "2.8.13", Summary: "Return a human readable latency analysis report.", Handler: latencyDoctor},
				{Name: "history", Docs: "event:string", Arity: 3, Flags: f, Args: "<event>", Since: "2.8.13", Summary: "Return time-latency samples for the <event> class.", Handler: latencyHistory},
				{Name: "latest", Arity: 2, Flags: f, Since: "2.8.13", Summary: "Return the latest latency samples for all events.", Handler: latencyLatest},
				{Name: "reset", Docs: "[event:string...]", Arity: -2, Flags: f, Args: "[<event> ...]", Since: "2.8.13",
					Summary: "Reset latency data of one or more <event> classes (default: all of them).", Handler: latencyReset},
				{Name: "histogram", Docs: "[command:string...]", Arity: -2, Flags: f, Args: "[COMMAND ...]", Since: "7.0.0",
					Summary: "Return a cumulative distribution of latencies in the format of a histogram for the specified command names (default: all).", Handler: latencyHistogram},
				{Name: "help", Arity: 2, Flags: command.Loading | command.Stale, Since: "2.8.13", Summary: "Prints this help.", Handler: subcommandHelp},
			}},
	}
}

// sortedEvents returns the event names, sorted. mu is held.
func (l *latencyEvents) sortedEvents() []string {
	names := make([]string, 0, len(l.events))
	for n := range l.events {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func latencyLatest(x *Ctx) {
	l := &x.s.ops.latency
	l.mu.Lock()
	defer l.mu.Unlock()
	names := l.sortedEvents()
	x.w.Array(len(names))
	for _, n := range names {
		e := l.events[n]
		x.w.Array(4)
		x.w.BulkString(n)
		x.w.Int(e.lastT)
		x.w.Int(e.lastV)
		x.w.Int(e.max)
	}
}

func latencyHistory(x *Ctx) {
	l := &x.s.ops.latency
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.events[string(x.args[2])]
	if e == nil {
		x.w.Array(0)
		return
	}
	h := e.history()
	x.w.Array(len(h))
	for _, smp := range h {
		x.w.Array(2)
		x.w.Int(smp.unix)
		x.w.Int(smp.ms)
	}
}

func latencyReset(x *Ctx) {
	l := &x.s.ops.latency
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	if len(x.args) == 2 {
		n = len(l.events)
		l.events = nil
	} else {
		for _, a := range x.args[2:] {
			if _, ok := l.events[string(a)]; ok {
				delete(l.events, string(a))
				n++
			}
		}
	}
	x.w.Int(int64(n))
}

const (
	latencyDoctorOff  = `I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use "CONFIG SET latency-monitor-threshold <milliseconds>." in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.`
	latencyDoctorNone = `Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.`
)

// latencyDoctor answers Redis's two fixed texts when the monitor is off or
// saw nothing; else a report of its own: each event's figures and what
// usually causes it.
func latencyDoctor(x *Ctx) {
	l := &x.s.ops.latency
	if l.threshold.Load() <= 0 {
		x.w.Verbatim(latencyDoctorOff + "\n")
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 {
		x.w.Verbatim(latencyDoctorNone + "\n")
		return
	}
	var b strings.Builder
	b.WriteString("Latency spikes were observed (threshold " + fmt.Sprint(l.threshold.Load()) + " ms).\n\n")
	for i, n := range l.sortedEvents() {
		e := l.events[n]
		h := e.history()
		var sum int64
		for _, smp := range h {
			sum += smp.ms
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %s). Worst all time event %dms.\n",
			i+1, n, len(h), sum/int64(len(h)), meanDeviation(h, sum/int64(len(h))), period(h), e.max)
	}
	b.WriteString("\nAdvice:\n")
	for _, n := range l.sortedEvents() {
		switch n {
		case "command":
			b.WriteString("- Slow commands ran: check SLOWLOG GET for which, and avoid O(N) commands on large values (KEYS, SMEMBERS, HGETALL, LRANGE 0 -1...).\n")
		case "fast-command":
			b.WriteString("- Commands of constant cost were slow: the machine is overloaded or the process was descheduled (CPU steal, swap); check the host.\n")
		case "expire-cycle":
			b.WriteString("- Active expiry took long: many keys expire at the same time; spread their TTLs.\n")
		case "eviction-cycle":
			b.WriteString("- Eviction took long: the server is at maxmemory; raise it or write less.\n")
		}
	}
	x.w.Verbatim(b.String())
}

func meanDeviation(h []latencySample, avg int64) int64 {
	var d int64
	for _, smp := range h {
		d += max(smp.ms-avg, avg-smp.ms)
	}
	return d / int64(len(h))
}

// period is the average time between an event's samples.
func period(h []latencySample) string {
	if len(h) < 2 {
		return "n/a"
	}
	return fmt.Sprintf("%d sec", (h[len(h)-1].unix-h[0].unix)/int64(len(h)-1))
}

// latHistBuckets: values 0..3 µs have a bucket each; then four per power
// of two up to 2^63.
const latHistBuckets = 4 + 62*4

// latHist is one command's histogram of call durations in µs.
type latHist struct {
	b [latHistBuckets]atomic.Int64
}

func latBucket(us int64) int {
	if us < 4 {
		return int(max(us, 0))
	}
	e := bits.Len64(uint64(us)) - 1 // >= 2
	sub := int(us>>(e-2)) & 3
	return 4 + (e-2)*4 + sub
}

// latBucketMax is the largest value bucket i holds.
func latBucketMax(i int) int64 {
	if i < 4 {
		return int64(i)
	}
	e, sub := (i-4)/4+2, int64((i-4)%4)
	return (5+sub)<<(e-2) - 1
}

func (h *latHist) add(us, weight int64) { h.b[latBucket(us)].Add(weight) }

func (h *latHist) reset() {
	for i := range h.b {
		h.b[i].Store(0)
	}
}

// snapshot returns the counts and their total.
func (h *latHist) snapshot() (counts [latHistBuckets]int64, total int64) {
	for i := range h.b {
		counts[i] = h.b[i].Load()
		total += counts[i]
	}
	return counts, total
}

// percentile returns the value at or below which p% of the counts lie
// (the largest value of the bucket holding it).
func percentile(counts *[latHistBuckets]int64, total int64, p float64) int64 {
	want := int64(float64(total)*p/100 + 0.5)
	want = max(want, 1)
	var run int64
	for i, n := range counts {
		run += n
		if run >= want {
			return latBucketMax(i)
		}
	}
	return 0
}

// histogram returns the command's histogram, made on first use.
func (cs *cmdStat) histogram() *latHist {
	if h := cs.hist.Load(); h != nil {
		return h
	}
	cs.hist.CompareAndSwap(nil, &latHist{})
	return cs.hist.Load()
}

// latencyPercentiles are the percentiles INFO latencystats reports
// (Redis's latency-tracking-info-percentiles default).
var latencyPercentiles = []float64{50, 99, 99.9}

func infoLatencyStats(s *Server, b *strings.Builder, _ int64) {
	for _, c := range s.table.All() {
		h := s.stats.cmds[c.ID()].hist.Load()
		if h == nil {
			continue
		}
		counts, total := h.snapshot()
		if total == 0 {
			continue
		}
		b.WriteString("latency_percentiles_usec_" + c.FullName() + ":")
		for i, p := range latencyPercentiles {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "p%s=%d.000", strings.TrimSuffix(fmt.Sprint(p), ".0"), percentile(&counts, total, p))
		}
		b.WriteString("\r\n")
	}
}

// latencyHistogram is LATENCY HISTOGRAM [command ...]: per command (all
// that have a histogram when none is named; unknown names are skipped) its
// calls and the cumulative count of calls up to each power of two of µs.
func latencyHistogram(x *Ctx) {
	var cmds []*Command
	if len(x.args) == 2 {
		for _, c := range x.s.table.All() {
			cmds = append(cmds, c)
		}
	} else {
		for _, a := range x.args[2:] {
			c := x.s.table.Lookup(a)
			if c == nil {
				if name, sub, ok := strings.Cut(string(a), "|"); ok {
					if p := x.s.table.Lookup([]byte(name)); p != nil {
						c = p.Sub([]byte(sub))
					}
				}
			}
			if c != nil && !slices.Contains(cmds, c) {
				cmds = append(cmds, c)
			}
		}
	}
	type row struct {
		c      *Command
		counts [latHistBuckets]int64
		total  int64
	}
	var rows []row
	for _, c := range cmds {
		if h := x.s.stats.cmds[c.ID()].hist.Load(); h != nil {
			counts, total := h.snapshot()
			if total > 0 {
				rows = append(rows, row{c, counts, total})
			}
		}
	}
	x.w.Map(len(rows))
	for _, r := range rows {
		x.w.BulkString(r.c.FullName())
		x.w.Map(2)
		x.w.BulkString("calls")
		x.w.Int(r.total)
		x.w.BulkString("histogram_usec")
		type point struct{ le, cum int64 }
		var pts []point
		var run int64
		for i, n := range r.counts {
			if n == 0 {
				continue
			}
			run += n
			le := int64(1) << bits.Len64(uint64(latBucketMax(i))) // the power of two above the bucket
			if len(pts) > 0 && pts[len(pts)-1].le == le {
				pts[len(pts)-1].cum = run
			} else {
				pts = append(pts, point{le, run})
			}
		}
		x.w.Map(len(pts))
		for _, p := range pts {
			x.w.Int(p.le)
			x.w.Int(p.cum)
		}
	}
}
