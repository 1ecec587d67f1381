package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The clients of one run, each a goroutine with its own connection(s):
// the flood, the hot limited clients, the probe and the samplers. Each
// stops when its context is cancelled; every network call has a deadline.

// ioTimeout bounds one pipeline's write and read: far above any stall the
// run measures, so it only fires when the server is gone or hung.
const ioTimeout = 30 * time.Second

// errLog keeps the first few distinct error texts of a kind.
type errLog struct {
	mu    sync.Mutex
	texts []string
}

func (l *errLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.texts {
		if t == s {
			return
		}
	}
	if len(l.texts) < 5 {
		l.texts = append(l.texts, s)
	}
}

func (l *errLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.texts, "; ")
}

// isOOM reports whether an error reply is the memory limit's refusal.
func isOOM(s string) bool { return strings.HasPrefix(s, "OOM ") }

// ---------------------------------------------------------------- flood --

type floodStats struct {
	sent      atomic.Int64 // commands whose reply was read
	throttles atomic.Int64
	sets      atomic.Int64
	oom       atomic.Int64
	other     atomic.Int64 // error replies other than OOM, and connection errors
	errs      errLog
}

// scramble maps the counter i to a distinct 64-bit id (multiplication by
// an odd constant is a bijection modulo 2^64), so that key names look
// random while no two are the same.
func scramble(i int64) uint64 { return uint64(i) * 0x9e3779b97f4a7c15 }

// isSet reports whether key i of the flood is a SET of a large value:
// a share of the keys spread evenly by a second hash.
func isSet(i int64, share float64) bool {
	h := uint64(i+1) * 0xbf58476d1ce4e5b9
	h ^= h >> 31
	return float64(h>>11)/(1<<53) < share
}

// flood sends the keys next hands out, batch at a time on one connection,
// until cfg.keys are taken, the deadline passes or ctx ends.
func flood(ctx context.Context, addr string, cfg *config, next *atomic.Int64, start, deadline time.Time, st *floodStats) {
	c, err := dial(addr)
	if err != nil {
		st.other.Add(1)
		st.errs.add(err.Error())
		return
	}
	defer c.close()
	value := strings.Repeat("v", cfg.valueSize)
	ex := strconv.Itoa(cfg.setEx)
	b := int64(cfg.batch)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		n := next.Add(b) - b
		if n >= cfg.keys {
			return
		}
		end := min(n+b, cfg.keys)
		if cfg.rate > 0 {
			due := start.Add(time.Duration(float64(n) / cfg.rate * float64(time.Second)))
			if due.After(deadline) {
				due = deadline
			}
			if !sleepUntil(ctx, due) || time.Now().After(deadline) {
				return
			}
		}
		var sets int64
		for i := n; i < end; i++ {
			id := strconv.FormatUint(scramble(i), 10)
			switch {
			case !isSet(i, cfg.setShare):
				c.appendCmd("CL.THROTTLE", "flood:"+id, "10", "100", "86400")
			case cfg.setEx > 0:
				c.appendCmd("SET", "big:"+id, value, "EX", ex)
				sets++
			default:
				c.appendCmd("SET", "big:"+id, value)
				sets++
			}
		}
		dl := time.Now().Add(ioTimeout)
		if err := c.flush(dl); err != nil {
			st.other.Add(1)
			st.errs.add(err.Error())
			return
		}
		for i := n; i < end; i++ {
			r, err := c.read(dl)
			if err != nil {
				st.other.Add(1)
				st.errs.add(err.Error())
				return
			}
			switch {
			case r.isErr() && isOOM(r.str):
				st.oom.Add(1)
			case r.isErr():
				st.other.Add(1)
				st.errs.add(r.str)
			}
		}
		st.sent.Add(end - n)
		st.sets.Add(sets)
		st.throttles.Add(end - n - sets)
	}
}

// sleepUntil waits until t or until ctx ends (then false).
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ------------------------------------------------------------------ hot --

// hotKey is what one hot limited client saw.
type hotKey struct {
	name               string
	sent, allowed      int64
	limited, oom, errs int64
	first, last        time.Time // first request sent, last reply read
	prevRem            int64     // remaining in the last reply (-1: none yet)
	prevSent           time.Time // when the request of that reply was sent
	evictions          int64     // jumps of remaining that only a reset explains
}

// hotQuota is the hot clients' CL.THROTTLE quota: burst, count, period.
type hotQuota struct{ burst, count, period int64 }

// emission is the GCRA emission interval: one token per period/count.
func (q hotQuota) emission() time.Duration {
	return time.Duration(q.period) * time.Second / time.Duration(q.count)
}

// gcraMax is the most requests a correct GCRA limiter allows a key over
// elapsed, starting from a full bucket: burst+1 tokens at once, then one
// more each emission interval.
func (q hotQuota) gcraMax(elapsed time.Duration) int64 {
	return q.burst + 1 + int64(elapsed/q.emission())
}

// maxAllowed is gcraMax plus one for the boundary: a token that comes due
// right at the end, and the gap between the client's clock (elapsed is
// measured from the first request's sending to the last reply's arrival)
// and the server's.
func (q hotQuota) maxAllowed(elapsed time.Duration) int64 { return q.gcraMax(elapsed) + 1 }

// resetSeen reports whether a reply's remaining rem, after a reply with
// prev, shows that the bucket was reset (evicted) in between: without a
// reset, remaining grows by at most one token per emission interval e
// over the time dt between the earlier request's sending and this reply's
// arrival, plus one for rounding.
func resetSeen(prev, rem int64, dt, e time.Duration) bool {
	return rem > prev+1+int64(dt/e)
}

// hot sends one CL.THROTTLE for each of keys every cfg.hotEvery on one
// connection (one pipeline per tick) and records the replies in keys. A
// connection that fails is counted as an error and dialled again at the
// next tick.
func hot(ctx context.Context, addr string, cfg *config, keys []*hotKey, st *errLog) {
	var c *conn
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	tick := time.NewTicker(cfg.hotEvery)
	defer tick.Stop()
	for {
		if c == nil {
			var err error
			if c, err = dial(addr); err != nil {
				st.add(err.Error())
				keys[0].errs++
				c = nil
			}
		}
		if c != nil {
			if err := hotRound(c, cfg.hotQuota, keys, st); err != nil {
				st.add(err.Error())
				c.close()
				c = nil
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// hotRound sends one request for each key in one pipeline and records the
// replies; it returns a connection error (counted against the key whose
// reply it lost).
func hotRound(c *conn, q hotQuota, keys []*hotKey, st *errLog) error {
	burst, count, period := strconv.FormatInt(q.burst, 10), strconv.FormatInt(q.count, 10), strconv.FormatInt(q.period, 10)
	sent := time.Now()
	for _, k := range keys {
		c.appendCmd("CL.THROTTLE", k.name, burst, count, period)
	}
	dl := sent.Add(ioTimeout)
	if err := c.flush(dl); err != nil {
		keys[0].errs++
		return err
	}
	for _, k := range keys {
		r, err := c.read(dl)
		now := time.Now()
		if err != nil {
			k.errs++
			return err
		}
		if k.sent == 0 {
			k.first = sent
		}
		k.sent++
		k.last = now
		switch {
		case r.isErr() && isOOM(r.str):
			k.oom++
			continue
		case r.isErr():
			k.errs++
			st.add(r.str)
			continue
		case r.typ != '*' || len(r.arr) != 5:
			k.errs++
			st.add(fmt.Sprintf("CL.THROTTLE replied %q %q", r.typ, r.str))
			continue
		}
		if r.arr[0].num == 0 {
			k.allowed++
		} else {
			k.limited++
		}
		rem := r.arr[2].num
		if k.prevRem >= 0 && resetSeen(k.prevRem, rem, now.Sub(k.prevSent), q.emission()) {
			k.evictions++
		}
		k.prevRem, k.prevSent = rem, sent
	}
	return nil
}

// ---------------------------------------------------------------- probe --

type probeStats struct {
	lat    []time.Duration
	misses int64 // GET probe replied nil: the key was evicted
	errs   int64
	errLog errLog
}

// probe sends GET probe every cfg.probeEvery on its own connection and
// records each round trip.
func probe(ctx context.Context, addr string, cfg *config, st *probeStats) {
	var c *conn
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	tick := time.NewTicker(cfg.probeEvery)
	defer tick.Stop()
	for {
		if c == nil {
			var err error
			if c, err = dial(addr); err != nil {
				st.errs++
				st.errLog.add(err.Error())
				c = nil
			}
		}
		if c != nil {
			t0 := time.Now()
			r, err := c.do(ioTimeout, "GET", "probe")
			d := time.Since(t0)
			switch {
			case err != nil:
				st.errs++
				st.errLog.add(err.Error())
				c.close()
				c = nil
			case r.isErr():
				st.errs++
				st.errLog.add(r.str)
			case r.null:
				st.misses++
				st.lat = append(st.lat, d)
			default:
				st.lat = append(st.lat, d)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// ------------------------------------------------------------- samplers --

// sample is one point of the RSS time series.
type sample struct {
	t    time.Duration // since the flood started
	rss  int64
	used int64 // INFO used_memory last read (-1: not yet)
	sent int64 // flood commands answered so far
}

// memWatch holds what the INFO poller last read.
type memWatch struct {
	used    atomic.Int64
	evicted atomic.Int64
}

// pollInfo reads INFO memory and stats every interval into w.
func pollInfo(ctx context.Context, addr string, every time.Duration, w *memWatch) {
	w.used.Store(-1)
	c, err := dial(addr)
	if err != nil {
		return
	}
	defer c.close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if m, err := info(c, "memory"); err == nil {
			w.used.Store(infoInt(m, "used_memory"))
		}
		if m, err := info(c, "stats"); err == nil {
			w.evicted.Store(infoInt(m, "evicted_keys"))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sampleRSS records RSS every interval until ctx ends; limitAt is set to
// the time since start when the memory limit was first reached (used
// memory at maxmemory, a key evicted or an OOM error seen), -1 if never.
func sampleRSS(ctx context.Context, pid int, start time.Time, every time.Duration, maxmem int64,
	w *memWatch, fs *floodStats, out *[]sample, limitAt *time.Duration) {
	*limitAt = -1
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if r, err := rss(pid); err == nil {
			t := time.Since(start)
			used := w.used.Load()
			*out = append(*out, sample{t: t, rss: r, used: used, sent: fs.sent.Load()})
			if *limitAt < 0 && (used >= maxmem || w.evicted.Load() > 0 || fs.oom.Load() > 0) {
				*limitAt = t
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted d by the
// nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
