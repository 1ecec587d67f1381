package ratelimit

// Lease is one concurrency lease: its id, when it expires, and how many of
// the limit it holds.
type Lease struct {
	ID   uint64
	Exp  int64
	Cost int64
}

// LeaseState is a concurrency limit (seed §8: count what is in flight, not
// what arrived): the leases alive and the id the next one gets. A fresh
// key's sequence starts at the time of its first lease (Unix ns), so an
// id is never given twice for a key even after the key expired and came
// back (that would take a billion leases a second), and a late RELEASE
// of an old id cannot end someone else's lease. The zero value has no
// lease.
type LeaseState struct {
	Next   uint64
	Leases []Lease // by id, ascending
}

// live drops the expired leases (Exp <= now) and returns the cost held.
func (st *LeaseState) live(now int64) int64 {
	kept := st.Leases[:0]
	var used int64
	for _, l := range st.Leases {
		if l.Exp > now {
			kept = append(kept, l)
			used += l.Cost
		}
	}
	st.Leases = kept
	return used
}

// lastExp is when the last lease expires (0: none).
func (st *LeaseState) lastExp() int64 {
	var last int64
	for _, l := range st.Leases {
		last = max(last, l.Exp)
	}
	return last
}

// Acquire takes a lease of cost (>= 1) for ttl ns at now when the leases
// alive hold at most Limit-cost; the lease's id is the returned state's
// Next-1. A denial's RetryAfter is when enough leases expire on their own
// (they may be released sooner). The state is changed in place (its
// slice is reused); keep the returned one only when allowed.
func (r Rule) Acquire(st LeaseState, now, ttl, cost int64) (Decision, LeaseState, uint64) {
	used := st.live(now)
	reset := max(st.lastExp()-now, 0)
	remaining := max(r.Limit-used, 0)
	switch {
	case cost > r.Limit:
		return denyNever(r.Limit, remaining, reset), st, 0
	case used+cost > r.Limit:
		// Expiries in order until enough is free.
		need := used + cost - r.Limit
		at := int64(-1)
		for need > 0 {
			next := int64(-1)
			for _, l := range st.Leases {
				if l.Exp > at && (next < 0 || l.Exp < next) {
					next = l.Exp
				}
			}
			for _, l := range st.Leases {
				if l.Exp == next {
					need -= l.Cost
				}
			}
			at = next
		}
		return Decision{Limit: r.Limit, Remaining: remaining, RetryAfter: at - now, ResetAfter: reset}, st, 0
	}
	if len(st.Leases) == 0 && st.Next < uint64(now) {
		st.Next = uint64(now) // see LeaseState
	}
	id := st.Next
	st.Next++
	st.Leases = append(st.Leases, Lease{ID: id, Exp: now + ttl, Cost: cost})
	return Decision{Allowed: true, Limit: r.Limit, Remaining: r.Limit - used - cost, RetryAfter: -1,
		ResetAfter: max(st.lastExp()-now, 0)}, st, id
}

// Release ends lease id; false when it is not alive (released, expired or
// never given).
func (st LeaseState) Release(now int64, id uint64) (LeaseState, bool) {
	st.live(now)
	for i, l := range st.Leases {
		if l.ID == id {
			st.Leases = append(st.Leases[:i], st.Leases[i+1:]...)
			return st, true
		}
	}
	return st, false
}

// Renew makes lease id expire ttl ns after now; false when it is not alive.
func (st LeaseState) Renew(now int64, id uint64, ttl int64) (LeaseState, bool) {
	st.live(now)
	for i := range st.Leases {
		if st.Leases[i].ID == id {
			st.Leases[i].Exp = now + ttl
			return st, true
		}
	}
	return st, false
}

// Lifetime is how long the state still matters: until its last lease
// expires (0: no lease, the key can go).
func (st LeaseState) Lifetime(now int64) int64 {
	return max(st.lastExp()-now, 0)
}
