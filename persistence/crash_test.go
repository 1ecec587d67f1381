package persistence

// Simulated power loss: appenders and rewrites run on a crashFS that crashes
// after a random number of file system operations; the log is then loaded
// from what a disk would have kept, and compared with what writers were told.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile/turnstile/shards"
)

// history is one appender's view of its database: states[j] is the
// database after its first j effects; ackTime[j] is the simulated time
// (ticks) at which Sync returned for effect j (1-based; -1 if not acked).
type history struct {
	states  []state
	ackTime []int64
}

type crashCase struct {
	policy  FsyncPolicy
	rewrite bool
}

func TestCrashRecovery(t *testing.T) {
	iterations := 50
	if testing.Short() {
		iterations = 10
	}
	for _, cc := range []crashCase{
		{FsyncAlways, false},
		{FsyncAlways, true},
		{FsyncEverySec, false},
		{FsyncEverySec, true},
		{FsyncNo, true},
	} {
		t.Run(fmt.Sprintf("%v/rewrite=%v", cc.policy, cc.rewrite), func(t *testing.T) {
			var stats crashStats
			for it := range iterations {
				seed := uint64(it)*1000 + uint64(cc.policy)*10
				if cc.rewrite {
					seed++
				}
				runCrashLives(t, cc, seed, &stats)
			}
			t.Logf("%d crash points (%d during a rewrite, %d torn tails cut); acknowledged effects checked: %d; effects lost but unacknowledged or within the window: %d",
				stats.crashes, stats.duringRewrite, stats.torn, stats.acked, stats.lostAllowed)
			if stats.crashes < 2*iterations {
				t.Fatalf("only %d crash points", stats.crashes)
			}
			if cc.rewrite && stats.duringRewrite == 0 {
				t.Fatal("no crash point fell inside a rewrite")
			}
		})
	}
}

type crashStats struct {
	crashes, duringRewrite, torn int
	acked, lostAllowed           int64
}

// runCrashLives runs two lives of a log: the first from an empty directory,
// the second from what the first crash left.
func runCrashLives(t *testing.T, cc crashCase, seed uint64, stats *crashStats) {
	rng := rand.New(rand.NewPCG(seed, 42))
	fs := newCrashFS(seed)
	var now atomic.Int64
	tick := make(chan time.Time)
	tickDone := make(chan struct{})
	cfg := testCfg(fs, cc.policy)
	cfg.tick, cfg.tickDone = tick, tickDone
	l, err := OpenLog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	loaded := state{}
	if _, err := l.Load(func(e Effect) error { loaded.apply(e); return nil }); err != nil {
		t.Fatal(err)
	}
	for life := range 2 {
		const G = 4
		var crashT atomic.Int64
		var inRewrite atomic.Bool
		fs.mu.Lock()
		fs.partial = true
		fs.crashAt = fs.ops + 1 + int64(rng.IntN(600))
		fs.onCrash = func() {
			crashT.Store(now.Load())
			inRewrite.Store(l.rewriting.Load())
		}
		fs.mu.Unlock()

		ks := newKeyspace()
		for k, v := range loaded {
			ks.shards[shardOf([]byte(k.key))].m[k] = v
		}
		hists := make([]*history, G)
		stop := make(chan struct{})
		var wg, aux sync.WaitGroup
		for g := range G {
			h := &history{states: []state{loaded.db(g)}, ackTime: []int64{-1}}
			hists[g] = h
			wg.Add(1)
			go func() {
				defer wg.Done()
				appendUntilCrash(l, ks, g, h, &now, seed+uint64(g)+uint64(life)*100)
			}()
		}
		if cc.rewrite {
			aux.Add(1)
			go func() {
				defer aux.Done()
				for !fs.isCrashed() {
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(rng.IntN(300)) * time.Microsecond):
					}
					l.Rewrite(ks.freeze)
				}
			}()
		}
		if cc.policy == FsyncEverySec {
			aux.Add(1)
			go func() {
				defer aux.Done()
				for {
					time.Sleep(100 * time.Microsecond)
					select {
					case tick <- time.Time{}:
					case <-stop:
						return
					}
					select {
					case <-tickDone:
					case <-stop:
						return
					}
					now.Add(1)
				}
			}()
		}
		wg.Wait()
		fs.crashNow() // if the appenders ran out first
		close(stop)
		aux.Wait()
		l.Close()

		// Power comes back.
		fs = fs.recovered(seed + uint64(life) + 1)
		cfg.FS = fs
		l, err = OpenLog(cfg)
		if err != nil {
			t.Fatal(err)
		}
		loaded = state{}
		info, err := l.Load(func(e Effect) error { loaded.apply(e); return nil })
		if err != nil {
			t.Fatalf("seed %d life %d: load after crash: %v\nfiles: %v", seed, life, err, fs.list())
		}
		stats.crashes++
		if inRewrite.Load() {
			stats.duringRewrite++
		}
		if info.TornTail {
			stats.torn++
		}
		checkNoOrphans(t, fs)

		// What each appender was told against what was loaded.
		T := crashT.Load()
		for g, h := range hists {
			lower := 0 // effects 1..lower must be present
			for j := 1; j < len(h.states); j++ {
				at := h.ackTime[j]
				if at < 0 {
					continue
				}
				switch cc.policy {
				case FsyncAlways:
					lower = j
				case FsyncEverySec:
					if at <= T-2 {
						lower = j
					}
				}
			}
			got := loaded.db(g)
			match := -1
			for j := len(h.states) - 1; j >= lower; j-- {
				if got.equal(h.states[j]) {
					match = j
					break
				}
			}
			if match < 0 {
				t.Fatalf("seed %d life %d appender %d (%v): loaded state is not the state after any of effects %d..%d (acknowledged through %d)\nloaded: %v\nafter %d: %v",
					seed, life, g, cc.policy, lower, len(h.states)-1, lower, got, lower, h.states[lower])
			}
			stats.acked += int64(lower)
			stats.lostAllowed += int64(len(h.states) - 1 - match)
		}
	}
	l.Close()
}

// appendUntilCrash writes effects, alone or in units of several, on
// database g until a Sync fails. h.states has one state per unit.
func appendUntilCrash(l *Log, ks *keyspace, g int, h *history, now *atomic.Int64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	cur := h.states[0].clone()
	for i := range 400 {
		key := []byte(fmt.Sprintf("k%d", rng.IntN(6)))
		var e Effect
		var off int64
		switch r := rng.IntN(100); {
		case r < 50:
			e = Effect{Op: OpSet, DB: g, Key: key, Entry: shards.IntEntry(int64(i), int64(rng.IntN(2))*1e18)}
		case r < 62:
			e = Effect{Op: OpSet, DB: g, Key: key, Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte(strings.Repeat("x", rng.IntN(40)))}}
		case r < 80:
			e = Effect{Op: OpDel, DB: g, Key: key}
		case r < 95:
			// One unit of several effects (an EXEC): the log must load
			// all of them or none.
			unit := make([]Effect, 2+rng.IntN(3))
			for j := range unit {
				k := []byte(fmt.Sprintf("k%d", rng.IntN(6)))
				if rng.IntN(4) == 0 {
					unit[j] = Effect{Op: OpDel, DB: g, Key: k}
				} else {
					unit[j] = Effect{Op: OpSet, DB: g, Key: k, Entry: shards.IntEntry(int64(i*10+j), 0)}
				}
			}
			off = ks.writeAll(l, unit)
			for _, e := range unit {
				cur.apply(e)
			}
		default:
			e = Effect{Op: OpFlushDB, DB: g}
		}
		if e.Op != 0 {
			off = ks.write(l, e)
			cur.apply(e)
		}
		h.states = append(h.states, cur.clone())
		h.ackTime = append(h.ackTime, -1)
		if err := l.Sync(off); err != nil {
			return
		}
		h.ackTime[len(h.ackTime)-1] = now.Load()
	}
}

// checkNoOrphans: after a load, the directory holds the manifest's files
// only (and possibly the manifest's temporary file), or, when there is no
// manifest, only files of a first generation that never got one.
func checkNoOrphans(t *testing.T, fs *crashFS) {
	t.Helper()
	mpath := filepath.Join(testDir, testName+".manifest")
	b := fs.get(mpath)
	allowed := map[string]bool{mpath: true, mpath + ".tmp": true}
	if b == nil {
		allowed[filepath.Join(testDir, testName+".1.base")] = true
		allowed[filepath.Join(testDir, testName+".1.incr")] = true
	} else {
		m, _, reason := parseManifest(b, testName)
		if reason != "" {
			t.Fatal(reason)
		}
		for _, f := range slices.Concat([]string{m.base}, m.incrs) {
			allowed[filepath.Join(testDir, f)] = true
		}
	}
	for _, f := range fs.list() {
		if !allowed[f] {
			t.Fatalf("orphan file %s (files %v)", f, fs.list())
		}
	}
}

// TestCrashFSModel checks the simulator itself: what is not fsynced, and
// namespace changes not made durable by SyncDir, are lost.
func TestCrashFSModel(t *testing.T) {
	fs := newCrashFS(1)
	fs.MkdirAll("/d", 0o755)
	f, _ := fs.OpenFile("/d/a", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	f.Write([]byte("durable"))
	f.Sync()
	f.Write([]byte(" lost"))
	fs.SyncDir("/d")
	g, _ := fs.OpenFile("/d/b", os.O_WRONLY|os.O_CREATE, 0o644)
	g.Write([]byte("x"))
	g.Sync() // data synced, directory entry not
	fs.Rename("/d/a", "/d/c")
	r := fs.recovered(1)
	if got := string(r.get("/d/a")); got != "durable" {
		t.Fatalf("a = %q", got)
	}
	if r.get("/d/b") != nil || r.get("/d/c") != nil {
		t.Fatalf("unsynced namespace changes survived: %v", r.list())
	}
	if _, err := f.Write([]byte("x")); err != errCrashed {
		t.Fatalf("write after crash: %v", err)
	}
}
