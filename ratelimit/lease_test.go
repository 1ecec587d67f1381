package ratelimit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestLeasesNeverExceedLimit drives random acquires, releases, renewals
// and time against a model of the leases alive: the cost alive never
// exceeds Limit, every acquire is admitted exactly when the model has
// room, ids are never reused, and a denial's RetryAfter is when enough
// leases have expired on their own.
func TestLeasesNeverExceedLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for run := range 200 {
		r, _ := NewRule(1+rng.Int64N(8), int64(time.Second), 0)
		var st LeaseState
		model := map[uint64]Lease{}
		seen := map[uint64]bool{}
		now := int64(1_700_000_000) * 1e9
		for step := range 300 {
			now += rng.Int64N(int64(50 * time.Millisecond))
			if rng.IntN(5) == 0 { // exactly when a lease expires
				for _, l := range model {
					if l.Exp > now {
						now = l.Exp
						break
					}
				}
			}
			for id, l := range model {
				if l.Exp <= now {
					delete(model, id)
				}
			}
			var used int64
			for _, l := range model {
				used += l.Cost
			}
			switch rng.IntN(4) {
			case 0, 1:
				cost := 1 + rng.Int64N(3)
				ttl := 1 + rng.Int64N(int64(300*time.Millisecond))
				cp := LeaseState{Next: st.Next, Leases: append([]Lease(nil), st.Leases...)}
				d, next, id := r.Acquire(cp, now, ttl, cost)
				if d.Allowed != (used+cost <= r.Limit) {
					t.Fatalf("run %d step %d: allowed=%v with %d of %d held, cost %d", run, step, d.Allowed, used, r.Limit, cost)
				}
				if !d.Allowed {
					if d.RetryAfter > 0 {
						// At RetryAfter enough has expired; 1 ns before, not.
						free := func(at int64) int64 {
							var u int64
							for _, l := range model {
								if l.Exp > at {
									u += l.Cost
								}
							}
							return r.Limit - u
						}
						if free(now+d.RetryAfter) < cost || free(now+d.RetryAfter-1) >= cost {
							t.Fatalf("run %d step %d: RetryAfter %d is wrong", run, step, d.RetryAfter)
						}
					}
					continue
				}
				if seen[id] {
					t.Fatalf("run %d step %d: id %d given twice", run, step, id)
				}
				seen[id] = true
				model[id] = Lease{ID: id, Exp: now + ttl, Cost: cost}
				st = next
			case 2:
				id := st.Next - 1 - uint64(rng.IntN(3))
				_, alive := model[id]
				var ok bool
				st, ok = st.Release(now, id)
				if ok != alive {
					t.Fatalf("run %d step %d: release %d = %v, alive %v", run, step, id, ok, alive)
				}
				delete(model, id)
			case 3:
				id := st.Next - 1 - uint64(rng.IntN(3))
				l, alive := model[id]
				ttl := 1 + rng.Int64N(int64(300*time.Millisecond))
				var ok bool
				st, ok = st.Renew(now, id, ttl)
				if ok != alive {
					t.Fatalf("run %d step %d: renew %d = %v, alive %v", run, step, id, ok, alive)
				}
				if alive {
					l.Exp = now + ttl
					model[id] = l
				}
			}
			var held int64
			for _, l := range st.Leases {
				if l.Exp > now {
					held += l.Cost
				}
			}
			if held > r.Limit {
				t.Fatalf("run %d step %d: %d held, limit %d", run, step, held, r.Limit)
			}
		}
	}
}

// TestBorrowKeepsTheBound: tokens borrowed, spent directly and returned
// share one bucket; what is spent for good never exceeds what the bucket
// admits (Capacity + elapsed/Interval), returns never exceed what is lent,
// and the bucket never books beyond its capacity.
func TestBorrowKeepsTheBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for run := range 200 {
		r, _ := NewRule(1+rng.Int64N(20), int64(time.Second), rng.Int64N(30))
		var st GCRAState
		start := int64(1_700_000_000) * 1e9
		now := start
		var spent, lentOut int64 // tokens used for good; lent and not returned
		for step := range 400 {
			now += rng.Int64N(r.Interval() * 2)
			if st.TAT <= now {
				lentOut = 0 // a full bucket forgives
			}
			switch rng.IntN(3) {
			case 0:
				d, next, g := r.Borrow(st, now, 1+rng.Int64N(10))
				if d.Allowed != (g > 0) {
					t.Fatalf("run %d step %d: granted %d, allowed %v", run, step, g, d.Allowed)
				}
				if g > 0 {
					st, spent, lentOut = next, spent+g, lentOut+g
				}
			case 1:
				m := rng.Int64N(12)
				var back int64
				st, back = r.Return(st, now, m)
				if back > m || back > lentOut || back < 0 {
					t.Fatalf("run %d step %d: took back %d of %d (lent %d)", run, step, back, m, lentOut)
				}
				spent, lentOut = spent-back, lentOut-back
			case 2:
				if d, next := r.GCRA(st, now, 1); d.Allowed {
					st, spent = next, spent+1
				}
			}
			if st.TAT-now > r.Capacity()*r.Interval() {
				t.Fatalf("run %d step %d: booked %d ahead, capacity %d", run, step, st.TAT-now, r.Capacity()*r.Interval())
			}
			if bound := r.Capacity() + (now-start)/r.Interval(); spent > bound {
				t.Fatalf("run %d step %d: %d spent, bound %d", run, step, spent, bound)
			}
		}
	}
}
