package persistence

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile/turnstile/shards"
)

// loadCounts loads the log on fs and returns how many times each key was
// set (by the base or by an effect).
func loadCounts(t *testing.T, fs FS) map[string]int {
	t.Helper()
	l, err := OpenLog(testCfg(fs, FsyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	counts := map[string]int{}
	if _, err := l.Load(func(e Effect) error {
		if e.Op == OpSet {
			counts[string(e.Key)]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return counts
}

// TestRewriteEachEffectOnce: a rewrite puts every effect in exactly one of
// the new base and the new incremental file, wherever it falls: appended
// before the freeze (after the rewrite began), after the freeze, while the
// base is written, after the rewrite. Each key is set once, so loading
// counts how often each effect is applied; once is the only right answer
// (a list push applied twice would be one push too many). It runs on a log
// with files and on one Load found empty (the first files come from the
// rewrite).
func TestRewriteEachEffectOnce(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		t.Run(fmt.Sprintf("fresh=%v", fresh), func(t *testing.T) {
			l, fs := openMem(t, FsyncAlways)
			ks := newKeyspace()
			n := 0
			var off int64
			write := func() {
				n++
				off = ks.write(l, Effect{Op: OpSet, Key: fmt.Appendf(nil, "k%d", n), Entry: shards.IntEntry(int64(n), 0)})
			}
			if !fresh {
				write()
				if err := l.Sync(off); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 3 {
				err := l.Rewrite(func(at func()) DumpFunc {
					write() // before the freeze: in the old files and the base
					d := ks.freeze(at)
					write() // after it: in the new incremental file only
					return func(emit EmitFunc) error {
						write()
						return d(emit)
					}
				})
				if err != nil {
					t.Fatalf("rewrite %d: %v", round, err)
				}
				write()
				if err := l.Sync(off); err != nil {
					t.Fatal(err)
				}
			}
			// As the files are now, and after a power loss now (everything
			// was synced).
			for _, img := range []*crashFS{fs.clone(), fs.recovered(1)} {
				counts := loadCounts(t, img)
				for i := 1; i <= n; i++ {
					if c := counts[fmt.Sprintf("k%d", i)]; c != 1 {
						t.Errorf("k%d applied %d times, want once", i, c)
					}
				}
			}
		})
	}
}

// TestRewriteEachEffectOnceConcurrent: the same with writers appending
// concurrently with rewrites, as the server's connections do.
func TestRewriteEachEffectOnceConcurrent(t *testing.T) {
	l, fs := openMem(t, FsyncAlways)
	ks := newKeyspace()
	const writers = 4
	var ops atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	done := make([]int, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1_000_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e := Effect{Op: OpSet, DB: g % 2, Key: fmt.Appendf(nil, "w%d-%d", g, i), Entry: shards.IntEntry(int64(i), 0)}
				if err := l.Sync(ks.write(l, e)); err != nil {
					t.Error(err)
					return
				}
				done[g] = i + 1
				ops.Add(1)
			}
		}()
	}
	waitOps := func(k int64) {
		deadline := time.Now().Add(5 * time.Second)
		for start := ops.Load(); ops.Load() < start+k && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
	}
	const rewrites = 8
	for r := range rewrites {
		waitOps(50)
		if err := l.Rewrite(ks.freeze); err != nil {
			t.Fatalf("rewrite %d: %v", r, err)
		}
	}
	waitOps(50)
	close(stop)
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	counts := loadCounts(t, fs)
	total := 0
	for g, n := range done {
		total += n
		for i := range n {
			if c := counts[fmt.Sprintf("w%d-%d", g, i)]; c != 1 {
				t.Fatalf("w%d-%d applied %d times, want once", g, i, c)
			}
		}
	}
	if len(counts) != total {
		t.Fatalf("%d keys loaded, %d written", len(counts), total)
	}
	t.Logf("%d rewrites, %d effects", rewrites, total)
}

// TestRewriteFreezeContract: a FreezeFunc that does not call at exactly
// once fails the rewrite, which leaves the log as it was; the dump it
// returned is still called, so that it can release what it took.
func TestRewriteFreezeContract(t *testing.T) {
	l, fs := openMem(t, FsyncAlways)
	e := Effect{Op: OpSet, Key: []byte("a"), Entry: shards.IntEntry(1, 0)}
	if err := l.Sync(l.Append(e)); err != nil {
		t.Fatal(err)
	}
	for _, ats := range []int{0, 2} {
		called := false
		err := l.Rewrite(func(at func()) DumpFunc {
			for range ats {
				at()
			}
			return func(emit EmitFunc) error {
				called = true
				return emit(0, []byte("b"), shards.IntEntry(2, 0))
			}
		})
		if err == nil {
			t.Fatalf("at called %d times: rewrite succeeded", ats)
		}
		if !called {
			t.Fatalf("at called %d times: the dump was not released", ats)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if c := loadCounts(t, fs); len(c) != 1 || c["a"] != 1 {
		t.Fatalf("loaded %v", c)
	}
}
