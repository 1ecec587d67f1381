package server

import "time"

// Active expiry runs in short slices so that clients never wait long for
// it: with GOMAXPROCS=1 a slice holds the only P, and every request that
// arrives meanwhile waits for it. A slice visits shards one at a time and
// stops once expireSliceBudget has passed, checked between sampling rounds
// (a round removes at most 20 keys), so it lasts about its budget plus one
// round, or plus one table rebuild when a shrinking table is rebuilt in that
// round. Normally one slice runs every 1/Hz and finishes a full pass over
// every database's shards well within its budget. When a slice had to stop
// early, or a shard it visited is still mostly dead (a mass expiry), the
// next slice follows after expireDuty times the slice's length instead:
// active expiry then uses about 1/(1+expireDuty) of a core, like Redis's 25%
// for its slow cycle, in slices short enough not to stall clients for long.
const (
	expireSliceBudget = 250 * time.Microsecond
	expireDuty        = 3
	expireMinGap      = 200 * time.Microsecond
)

// expireLoop runs active expiry until the server stops.
func (s *Server) expireLoop() {
	t := time.NewTimer(time.Second / time.Duration(s.hz.Load()))
	defer t.Stop()
	var e expirer
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.setAccessClocks()
		next := time.Second / time.Duration(s.hz.Load()) // hz may change (CONFIG SET)
		// DEBUG SET-ACTIVE-EXPIRE 0 turns active expiry off.
		if s.debug.noActiveExpire.Load() {
			t.Reset(next)
			continue
		}
		// As Redis: no active expiry while the dataset loads. A key that has
		// expired by now may still be changed by effects further on in the
		// log; removing it between two of them would replay the rest onto
		// a key that is not there.
		if s.persist.loading.Load() {
			t.Reset(next)
			continue
		}
		if s.pausedNow() { // as Redis: no active expiry while clients are paused (pause.go)
			t.Reset(next)
			continue
		}
		start := time.Now()
		if e.slice(s, start) {
			next = max(expireDuty*time.Since(start), expireMinGap)
		}
		s.latencySince("expire-cycle", start) // LATENCY (latency.go)
		t.Reset(next)
	}
}

// expirer remembers where the last slice stopped. Only expireLoop uses it.
type expirer struct {
	db int // database the next slice starts with
}

// slice runs active expiry for up to expireSliceBudget from start: at most
// one full pass over every shard of every database with keys to expire,
// starting where the last slice stopped. It reports whether to come back
// soon: the budget ran out while keys were being removed, or a shard is
// still stale. A slice that runs out of budget having found nothing to
// remove (many shards, none with keys due) leaves the rest of the pass to
// the next regular tick: coming back soon would keep a quarter of a core
// busy finding nothing.
func (e *expirer) slice(s *Server, start time.Time) (more bool) {
	now := s.clock.Now()
	stop := func() bool { return time.Since(start) >= expireSliceBudget }
	removed := 0
	for range s.dbs {
		if e.db >= len(s.dbs) {
			e.db = 0
		}
		db := s.dbs[e.db]
		for j := 0; j < db.NumShards() && db.Expires() > 0; j++ {
			if stop() {
				return more || removed > 0
			}
			n, again := db.ExpireShards(now, 1, stop)
			removed += n
			more = more || again
		}
		e.db++
	}
	return more
}
