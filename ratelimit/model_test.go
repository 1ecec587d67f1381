package ratelimit

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// A model is a plain, slow statement of an algorithm over the full history
// of admitted requests: decide says whether a request of cost at now
// would be admitted, admit records it.
type model interface {
	decide(now, cost int64) (ok bool, remaining, reset int64)
	admit(now, cost int64)
}

// fixedModel counts the cost admitted per aligned window.
type fixedModel struct {
	r     Rule
	count map[int64]int64
}

func (m *fixedModel) decide(now, cost int64) (bool, int64, int64) {
	w := floorDiv(now, m.r.Period)
	c := m.count[w]
	reset := int64(0)
	if c > 0 {
		reset = (w+1)*m.r.Period - now
	}
	return cost <= m.r.Limit && c+cost <= m.r.Limit, m.r.Limit - c, reset
}

func (m *fixedModel) admit(now, cost int64) { m.count[floorDiv(now, m.r.Period)] += cost }

// logModel keeps every admitted request.
type logModel struct {
	r   Rule
	log []Entry
}

func (m *logModel) decide(now, cost int64) (bool, int64, int64) {
	var used, last int64
	for _, e := range m.log {
		if e.At > now-m.r.Period {
			used += e.Cost
			last = max(last, e.At+m.r.Period-now)
		}
	}
	return cost <= m.r.Limit && used+cost <= m.r.Limit, max(m.r.Limit-used, 0), last
}

func (m *logModel) admit(now, cost int64) { m.log = append(m.log, Entry{now, cost}) }

// slidingModel evaluates the seed's estimate prev*(1-f) + cur in exact
// rational arithmetic.
type slidingModel struct {
	r     Rule
	count map[int64]int64
}

func (m *slidingModel) estimate(now int64) (*big.Rat, int64) {
	p := m.r.Period
	w := floorDiv(now, p)
	f := big.NewRat(now-w*p, p)
	weight := new(big.Rat).Sub(big.NewRat(1, 1), f)
	est := new(big.Rat).Mul(weight, big.NewRat(m.count[w-1], 1))
	return est.Add(est, big.NewRat(m.count[w], 1)), w
}

func (m *slidingModel) decide(now, cost int64) (bool, int64, int64) {
	est, w := m.estimate(now)
	lhs := new(big.Rat).Add(est, big.NewRat(cost-1, 1))
	ok := cost <= m.r.Limit && lhs.Cmp(big.NewRat(m.r.Limit, 1)) < 0
	// remaining: the number of k >= 1 with est + k - 1 < limit.
	room := new(big.Rat).Sub(big.NewRat(m.r.Limit, 1), est)
	remaining := int64(0)
	if room.Sign() > 0 {
		q := new(big.Int).Quo(room.Num(), room.Denom())
		remaining = q.Int64()
		if new(big.Rat).SetInt(q).Cmp(room) != 0 {
			remaining++
		}
	}
	reset := int64(0)
	switch {
	case m.count[w] > 0:
		reset = (w+2)*m.r.Period - now
	case m.count[w-1] > 0:
		reset = (w+1)*m.r.Period - now
	}
	return ok, remaining, reset
}

func (m *slidingModel) admit(now, cost int64) { m.count[floorDiv(now, m.r.Period)] += cost }

// queueModel keeps the instant each admitted unit leaves.
type queueModel struct {
	r    Rule
	outs []int64
}

func (m *queueModel) plan(now, cost int64) (waitingBefore, waitingAfter, first int64) {
	t := m.r.Interval()
	next := now
	for _, o := range m.outs {
		if o > now {
			waitingBefore++
		}
		next = max(next, o+t)
	}
	first = next
	waitingAfter = waitingBefore
	for j := range cost {
		if next+j*t > now {
			waitingAfter++
		}
	}
	return
}

func (m *queueModel) decide(now, cost int64) (bool, int64, int64) {
	before, after, _ := m.plan(now, cost)
	reset := int64(0)
	if n := len(m.outs); n > 0 {
		reset = max(m.outs[n-1]+m.r.Interval()-now, 0)
	}
	return after <= m.r.Burst, m.r.Burst - before, reset
}

func (m *queueModel) admit(now, cost int64) {
	_, _, first := m.plan(now, cost)
	for j := range cost {
		m.outs = append(m.outs, first+j*m.r.Interval())
	}
}

// bucketModel is a token bucket with exact rational tokens: Capacity at
// first, one more every Interval up to Capacity.
type bucketModel struct {
	r      Rule
	tokens *big.Rat
	last   int64
	begun  bool
}

func (m *bucketModel) at(now int64) *big.Rat {
	c := big.NewRat(m.r.Capacity(), 1)
	if !m.begun {
		return c
	}
	tk := new(big.Rat).Add(m.tokens, big.NewRat(max(now-m.last, 0), m.r.Interval()))
	if tk.Cmp(c) > 0 {
		return c
	}
	return tk
}

func (m *bucketModel) decide(now, cost int64) (bool, int64, int64) {
	tk := m.at(now)
	ok := tk.Cmp(big.NewRat(cost, 1)) >= 0
	whole := new(big.Int).Quo(tk.Num(), tk.Denom()).Int64()
	// Full again after (Capacity - tokens) * Interval.
	missing := new(big.Rat).Sub(big.NewRat(m.r.Capacity(), 1), tk)
	missing.Mul(missing, big.NewRat(m.r.Interval(), 1))
	return ok, whole, new(big.Int).Quo(missing.Num(), missing.Denom()).Int64()
}

func (m *bucketModel) admit(now, cost int64) {
	m.tokens = new(big.Rat).Sub(m.at(now), big.NewRat(cost, 1))
	m.last, m.begun = max(now, m.last), true
}

// algo runs one algorithm on its own state.
type algo struct {
	name  string
	model func(Rule) model
	step  func(r Rule, now, cost int64, commit bool) Decision
}

func algos() []algo {
	var fx FixedState
	var sl SlidingState
	var lg LogState
	var qu QueueState
	var gc GCRAState
	return []algo{
		{"gcra", func(r Rule) model { gc = GCRAState{}; return &bucketModel{r: r} },
			func(r Rule, now, cost int64, commit bool) Decision {
				d, n := r.GCRA(gc, now, cost)
				if commit && d.Allowed {
					gc = n
				}
				return d
			}},
		{"fixed", func(r Rule) model { fx = FixedState{}; return &fixedModel{r: r, count: map[int64]int64{}} },
			func(r Rule, now, cost int64, commit bool) Decision {
				d, n := r.Fixed(fx, now, cost)
				if commit && d.Allowed {
					fx = n
				}
				return d
			}},
		{"sliding", func(r Rule) model { sl = SlidingState{}; return &slidingModel{r: r, count: map[int64]int64{}} },
			func(r Rule, now, cost int64, commit bool) Decision {
				d, n := r.Sliding(sl, now, cost)
				if commit && d.Allowed {
					sl = n
				}
				return d
			}},
		{"log", func(r Rule) model { lg = LogState{}; return &logModel{r: r} },
			func(r Rule, now, cost int64, commit bool) Decision {
				// Work on a copy: Log shares the entries' array.
				cp := LogState{Entries: append([]Entry(nil), lg.Entries...)}
				d, n := r.Log(cp, now, cost)
				if commit && d.Allowed {
					// Round-trip through the encoding, as the server will.
					st, err := DecodeLog(AppendLog(nil, n), nil)
					if err != nil {
						panic(err)
					}
					lg = st
				}
				return d
			}},
		{"queue", func(r Rule) model { qu = QueueState{}; return &queueModel{r: r} },
			func(r Rule, now, cost int64, commit bool) Decision {
				d, n := r.Queue(qu, now, cost)
				if commit && d.Allowed {
					qu = n
				}
				return d
			}},
	}
}

// TestAgainstModels drives every algorithm and its model with random
// rules and request sequences and compares every decision, Remaining and
// ResetAfter, and checks RetryAfter by asking the model one nanosecond
// before it (still denied) and at it (admitted).
func TestAgainstModels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, a := range algos() {
		for run := range 300 {
			limit := 1 + rng.Int64N(12)
			period := (1 + rng.Int64N(40)) * int64(time.Millisecond)
			if rng.IntN(4) == 0 {
				period += rng.Int64N(int64(time.Millisecond)) // not a whole ms
			}
			r, err := NewRule(limit, period, rng.Int64N(6))
			if err != nil {
				t.Fatal(err)
			}
			m := a.model(r)
			now := int64(1_700_000_000)*1e9 + rng.Int64N(period)
			var admitted []int64
			for i := range 60 {
				switch rng.IntN(6) {
				case 4: // exactly one period after an admitted request
					if n := len(admitted); n > 0 {
						now = max(now, admitted[rng.IntN(n)]+period)
					}
				case 5: // a window boundary
					now = (floorDiv(now, period) + 1) * period
				case 0: // same instant
				case 1:
					now += rng.Int64N(r.Interval() + 1)
				default:
					now += rng.Int64N(2 * period / limit)
				}
				cost := 1 + rng.Int64N(3)
				if rng.IntN(10) == 0 {
					cost = r.Limit + r.Burst + 1 - rng.Int64N(2)
				}
				where := fmt.Sprintf("%s run %d step %d (rule %+v, cost %d)", a.name, run, i, r, cost)
				d := a.step(r, now, cost, false)
				ok, remaining, reset := m.decide(now, cost)
				if d.Allowed != ok || (!ok && (d.Remaining != remaining || d.ResetAfter != reset)) {
					t.Fatalf("%s: got %+v, model allowed=%v remaining=%d reset=%d", where, d, ok, remaining, reset)
				}
				if d.Remaining < 0 || d.Remaining > max(r.Limit, r.Burst) {
					t.Fatalf("%s: remaining out of range: %+v", where, d)
				}
				if !ok {
					checkRetry(t, where, m, d, now, cost)
					continue
				}
				if d.RetryAfter != -1 {
					t.Fatalf("%s: allowed with RetryAfter %d", where, d.RetryAfter)
				}
				a.step(r, now, cost, true)
				m.admit(now, cost)
				admitted = append(admitted, now)
				_, remaining, reset = m.decide(now, 1)
				if d.Remaining != remaining || d.ResetAfter != reset {
					t.Fatalf("%s: after admission got %+v, model remaining=%d reset=%d", where, d, remaining, reset)
				}
			}
		}
	}
}

func checkRetry(t *testing.T, where string, m model, d Decision, now, cost int64) {
	t.Helper()
	if d.RetryAfter == -1 {
		if ok, _, _ := m.decide(now+100*int64(time.Hour), cost); ok {
			t.Fatalf("%s: denied for ever, but the model admits it later", where)
		}
		return
	}
	if d.RetryAfter <= 0 {
		t.Fatalf("%s: denied with RetryAfter %d", where, d.RetryAfter)
	}
	if ok, _, _ := m.decide(now+d.RetryAfter-1, cost); ok {
		t.Fatalf("%s: RetryAfter %d is late: the model admits 1 ns earlier", where, d.RetryAfter)
	}
	if ok, _, _ := m.decide(now+d.RetryAfter, cost); !ok {
		t.Fatalf("%s: RetryAfter %d is early: the model still denies", where, d.RetryAfter)
	}
}

// TestSlidingRetryWhenLimitExceedsPeriod: with more requests per period
// than the period has nanoseconds, a full window blocks a full-size
// request through the whole next window as well.
func TestSlidingRetryWhenLimitExceedsPeriod(t *testing.T) {
	r, err := NewRule(3_000_000, int64(time.Millisecond), 0)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Period
	w := int64(1_700_000_000_000)
	st := SlidingState{Window: w, Cur: r.Limit}
	m := &slidingModel{r: r, count: map[int64]int64{w: r.Limit}}
	now := w*p + 1
	d, _ := r.Sliding(st, now, r.Limit)
	if d.Allowed {
		t.Fatalf("admitted: %+v", d)
	}
	if want := (w+2)*p - now; d.RetryAfter != want {
		t.Fatalf("RetryAfter %d, want %d (the start of the window after next)", d.RetryAfter, want)
	}
	checkRetry(t, "full window", m, d, now, r.Limit)
}
