package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile/turnstile/shards"
)

func TestLogRoundTrip(t *testing.T) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncEverySec, FsyncNo} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			l, fs := openMem(t, policy)
			effs := sampleEffects()
			var got []Effect
			for _, e := range effs {
				if err := l.Sync(l.Append(e)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, err := OpenLog(testCfg(fs, policy))
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			info, err := l2.Load(func(e Effect) error {
				e.Key = bytes.Clone(e.Key)
				e.Entry.Str = bytes.Clone(e.Entry.Str)
				got = append(got, e)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if info.Records != int64(len(effs)) || info.TornTail || info.Files != 2 {
				t.Fatalf("info %+v", info)
			}
			for i := range effs {
				if !effectsEqual(got[i], effs[i]) {
					t.Fatalf("effect %d: got %+v want %+v", i, got[i], effs[i])
				}
			}
		})
	}
}

func TestLoadFreshThenAppend(t *testing.T) {
	fs := newCrashFS(1)
	l, _ := OpenLog(testCfg(fs, FsyncAlways))
	if err := l.Sync(1); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("Sync before Load: %v", err)
	}
	info, err := l.Load(func(Effect) error { return nil })
	if err != nil || info.Files != 0 {
		t.Fatalf("fresh load: %+v %v", info, err)
	}
	if len(fs.list()) != 0 {
		t.Fatalf("fresh load created files: %v", fs.list())
	}
	if _, err := l.Load(func(Effect) error { return nil }); err == nil {
		t.Fatal("second Load accepted")
	}
	// Close with nothing appended creates nothing.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(fs.list()) != 0 {
		t.Fatalf("close created files: %v", fs.list())
	}
	if err := l.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := l.Sync(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}

	effs := smallEffects(30)
	fs2, _ := writeLog(t, effs)
	s, info, l2, err := loadState(t, fs2, FsyncAlways)
	defer l2.Close()
	if err != nil || info.Files != 2 || !s.equal(stateOf(effs)) {
		t.Fatalf("reload: %v %+v\n%v\n%v", err, info, s, stateOf(effs))
	}
	// Appends after a load go after the loaded ones.
	more := smallEffects(45)[30:]
	for _, e := range more {
		if err := l2.Sync(l2.Append(e)); err != nil {
			t.Fatal(err)
		}
	}
	l2.Close()
	s, _, l3, err := loadState(t, fs2, FsyncAlways)
	defer l3.Close()
	if err != nil || !s.equal(stateOf(slices.Concat(effs, more))) {
		t.Fatalf("after more appends: %v", err)
	}
}

// TestTornTailEveryOffset cuts a 20-record log at every byte offset.
func TestTornTailEveryOffset(t *testing.T) {
	effs := smallEffects(20)
	fs, incr := writeLog(t, effs)
	full := fs.get(incr)
	ends := recordEnds(t, full)
	if len(ends) != 20 {
		t.Fatalf("%d records", len(ends))
	}
	units := make([][]Effect, len(effs))
	for i := range effs {
		units[i] = effs[i : i+1]
	}
	for cut := 0; cut <= len(full); cut++ {
		for _, zeros := range []int{0, 1 + cut%13, 300 + cut%700} {
			tornAt(t, fs, incr, full, ends, units, cut, zeros)
		}
	}
}

// tornAt checks a log whose incremental file is cut at cut bytes, followed
// by zeros (a crash that extended the file before its data was written).
// The file holds units (each appended by one AppendAll), which end at ends:
// the load must give the effects of the units wholly present, nothing of
// the next.
func tornAt(t *testing.T, fs *crashFS, incr string, full []byte, ends []int, units [][]Effect, cut, zeros int) {
	t.Helper()
	{
		c := fs.clone()
		c.set(incr, append(bytes.Clone(full[:cut]), make([]byte, zeros)...))
		// Check and Fix on a copy, before Load truncates.
		cf := c.clone()
		rep, err := Check(cf, incr)
		if err != nil {
			t.Fatal(err)
		}
		s, info, l, err := loadState(t, c, FsyncAlways)
		l.Close()
		if cut < headerLen {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != incr || ce.Offset != 0 {
				t.Fatalf("cut %d in the header: err %v", cut, err)
			}
			if rep.Problem == nil || rep.Torn {
				t.Fatalf("cut %d: check %+v", cut, rep)
			}
			return
		}
		// Records wholly present (trailing zero bytes of a record may be
		// supplied by the zero fill).
		content := append(bytes.Clone(full[:cut]), make([]byte, zeros)...)
		n := 0
		for n < len(ends) && ends[n] <= len(content) && bytes.Equal(content[:ends[n]], full[:ends[n]]) {
			n++
		}
		good := headerLen
		if n > 0 {
			good = ends[n-1]
		}
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		effs := slices.Concat(units[:n]...)
		if info.Records != int64(len(effs)) || !s.equal(stateOf(effs)) {
			t.Fatalf("cut %d+%d zeros: loaded %d records (%v), want the %d of %d units", cut, zeros, info.Records, s, len(effs), n)
		}
		torn := len(content) != good
		if info.TornTail != torn || (torn && (info.TornFile != incr || info.TornOffset != int64(good))) {
			t.Fatalf("cut %d+%d zeros: info %+v, want torn=%v at %d", cut, zeros, info, torn, good)
		}
		if got := len(c.get(incr)); got != good {
			t.Fatalf("cut %d: file is %d bytes after load, want %d", cut, got, good)
		}
		if rep.Torn != torn || (rep.Problem == nil) == torn || rep.ValidLen != int64(good) || rep.Records != int64(len(effs)) {
			t.Fatalf("cut %d: check %+v", cut, rep)
		}
		frep, err := Fix(cf, incr)
		if err != nil || frep.Fixed != torn || len(cf.get(incr)) != good {
			t.Fatalf("cut %d: fix %+v %v, %d bytes", cut, frep, err, len(cf.get(incr)))
		}
		if rep, _ := Check(cf, incr); !rep.OK() {
			t.Fatalf("cut %d: after fix: %v", cut, rep.String())
		}
	}
}

// TestZeroFilledTail: a crash can leave the file extended with zeros.
func TestZeroFilledTail(t *testing.T) {
	effs := smallEffects(10)
	fs, incr := writeLog(t, effs)
	full := fs.get(incr)
	ends := recordEnds(t, full)
	for _, at := range []int{headerLen, ends[3], ends[9]} {
		for _, zeros := range []int{1, 8, 9, 100, 5000} {
			c := fs.clone()
			c.set(incr, append(bytes.Clone(full[:at]), make([]byte, zeros)...))
			s, info, l, err := loadState(t, c, FsyncAlways)
			l.Close()
			if err != nil || !info.TornTail || info.TornOffset != int64(at) || len(c.get(incr)) != at {
				t.Fatalf("at %d + %d zeros: %v %+v", at, zeros, err, info)
			}
			n := 0
			for n < len(ends) && ends[n] <= at {
				n++
			}
			if !s.equal(stateOf(effs[:n])) {
				t.Fatalf("at %d: wrong state", at)
			}
		}
	}
	// Zeros followed by data are damage.
	c := fs.clone()
	b := append(bytes.Clone(full[:ends[3]]), make([]byte, 20)...)
	c.set(incr, append(b, 1))
	if _, _, l, err := loadState(t, c, FsyncAlways); !isCorrupt(err) {
		t.Fatalf("zeros then data: %v", err)
	} else {
		l.Close()
	}
}

func isCorrupt(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce)
}

// TestBitFlipEveryBit flips every bit of a 20-record incremental file, of
// its base and of the manifest.
func TestBitFlipEveryBit(t *testing.T) {
	effs := smallEffects(20)
	fs, incr := writeLog(t, effs)
	// Give the log a non-empty base: rewrite, then 20 more effects.
	l, err := OpenLog(testCfg(fs, FsyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(func(Effect) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := l.Rewrite(stateOf(effs).freeze()); err != nil {
		t.Fatal(err)
	}
	more := smallEffects(40)[20:]
	for _, e := range more {
		l.Append(e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	base := testDir + "/" + testName + ".2.base"
	incr = testDir + "/" + testName + ".2.incr"
	manifest := testDir + "/" + testName + ".manifest"
	if fs.get(base) == nil || fs.get(incr) == nil || fs.get(testDir+"/"+testName+".1.incr") != nil {
		t.Fatalf("files: %v", fs.list())
	}
	want := stateOf(slices.Concat(effs, more))
	ends := recordEnds(t, fs.get(incr))
	lastStart := int64(ends[len(ends)-2])

	for _, file := range []string{incr, base, manifest} {
		orig := fs.get(file)
		detected, torn := 0, 0
		for bit := 0; bit < len(orig)*8; bit++ {
			c := fs.clone()
			b := bytes.Clone(orig)
			b[bit/8] ^= 1 << (bit % 8)
			c.set(file, b)
			s, info, l, err := loadState(t, c, FsyncAlways)
			l.Close()
			switch {
			case err != nil:
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.File != file {
					t.Fatalf("%s bit %d: error %v does not name the file", file, bit, err)
				}
				detected++
			case file == incr && info.TornTail && int64(bit/8) >= lastStart:
				// A flip in the last record may pass for a torn write.
				if info.TornOffset != lastStart || !s.equal(stateOf(slices.Concat(effs, more[:len(more)-1]))) {
					t.Fatalf("%s bit %d: torn at %d, state differs", file, bit, info.TornOffset)
				}
				torn++
			default:
				t.Fatalf("%s bit %d (byte %d of %d): not detected (info %+v, state equal: %v)", file, bit, bit/8, len(orig), info, s.equal(want))
			}
			// Check agrees.
			c = fs.clone()
			c.set(file, b)
			rep, err := Check(c, file)
			if err != nil || rep.OK() {
				t.Fatalf("%s bit %d: Check says ok (%v)", file, bit, err)
			}
		}
		t.Logf("%s: %d bits: %d errors, %d torn tails (last record)", filepath.Base(file), len(orig)*8, detected, torn)
	}
}

// TestBitFlipRandomLargeLog: thousands of random flips in a larger log.
func TestBitFlipRandomLargeLog(t *testing.T) {
	effs := smallEffects(400)
	fs, incr := writeLog(t, effs)
	orig := fs.get(incr)
	ends := recordEnds(t, orig)
	lastStart := ends[len(ends)-2]
	rng := rand.New(rand.NewPCG(7, 7))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		bit := rng.IntN(len(orig) * 8)
		c := fs.clone()
		b := bytes.Clone(orig)
		b[bit/8] ^= 1 << (bit % 8)
		c.set(incr, b)
		_, info, l, err := loadState(t, c, FsyncAlways)
		l.Close()
		if err == nil && !(info.TornTail && bit/8 >= lastStart) {
			t.Fatalf("bit %d not detected: %+v", bit, info)
		}
	}
}

func TestManifestDamage(t *testing.T) {
	fs, _ := writeLog(t, smallEffects(5))
	mpath := testDir + "/" + testName + ".manifest"
	good := fs.get(mpath)
	m, _, reason := parseManifest(good, testName)
	if reason != "" {
		t.Fatal(reason)
	}
	bad := map[string]manifest{
		"no incr":       {base: m.base},
		"no base":       {incrs: m.incrs},
		"foreign name":  {base: "other.1.base", incrs: m.incrs},
		"kind mismatch": {base: m.incrs[0], incrs: []string{m.base}},
		"path":          {base: m.base, incrs: []string{"../" + m.incrs[0]}},
		"duplicate":     {base: m.base, incrs: []string{m.incrs[0], m.incrs[0]}},
		"missing file":  {base: m.base, incrs: []string{testName + ".9.incr"}},
	}
	for name, bm := range bad {
		c := fs.clone()
		c.set(mpath, bm.encode())
		if _, _, l, err := loadState(t, c, FsyncAlways); !isCorrupt(err) {
			t.Errorf("%s: %v", name, err)
		} else {
			l.Close()
		}
	}
	for _, b := range [][]byte{nil, good[:len(good)-1], good[:10], []byte("garbage\n"), append(bytes.Clone(good), good...)} {
		c := fs.clone()
		c.set(mpath, b)
		if _, _, l, err := loadState(t, c, FsyncAlways); !isCorrupt(err) {
			t.Errorf("%q: %v", b, err)
		} else {
			l.Close()
		}
	}
	// A manifest with history lines loads, removes them and the files.
	c := fs.clone()
	c.set(testDir+"/"+testName+".0.incr", []byte("old"))
	m2 := m
	m2.history = []string{testName + ".0.incr", testName + ".0.base"}
	c.set(mpath, m2.encode())
	_, _, l, err := loadState(t, c, FsyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if c.get(testDir+"/"+testName+".0.incr") != nil {
		t.Fatal("history file not removed")
	}
	if m3, _, _ := parseManifest(c.get(mpath), testName); len(m3.history) != 0 {
		t.Fatalf("history still listed: %v", m3.history)
	}
}

// TestTornNonLastFile: a torn tail is only cut in the last incremental file.
func TestTornNonLastFile(t *testing.T) {
	effs := smallEffects(10)
	fs, incr1 := writeLog(t, effs)
	l, err := OpenLog(testCfg(fs, FsyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	l.Load(func(Effect) error { return nil })
	// A rewrite whose dump fails leaves two incremental files.
	if err := l.Rewrite(frozen(func(EmitFunc) error { return errors.New("dump failed") })); err == nil {
		t.Fatal("rewrite did not fail")
	}
	for _, e := range smallEffects(15)[10:] {
		l.Sync(l.Append(e))
	}
	l.Close()
	if fs.get(testDir+"/"+testName+".2.base") != nil {
		t.Fatal("failed rewrite left its base")
	}
	s, _, l2, err := loadState(t, fs, FsyncAlways)
	if err != nil || !s.equal(stateOf(smallEffects(15))) {
		t.Fatalf("two incrs: %v", err)
	}
	l2.Close()
	b := fs.get(incr1)
	fs.set(incr1, b[:len(b)-3])
	_, _, l3, err := loadState(t, fs, FsyncAlways)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != incr1 {
		t.Fatalf("torn non-last file: %v", err)
	}
	l3.Close()
}

func TestRewriteSequential(t *testing.T) {
	l, fs := openMem(t, FsyncEverySec)
	rng := rand.New(rand.NewPCG(3, 3))
	model := state{}
	for i := range 3000 {
		var e Effect
		key := []byte(fmt.Sprintf("k%d", rng.IntN(50)))
		switch r := rng.IntN(100); {
		case r < 60:
			e = Effect{Op: OpSet, DB: rng.IntN(3), Key: key, Entry: shards.IntEntry(rng.Int64(), rng.Int64N(2)*int64(i))}
		case r < 75:
			e = Effect{Op: OpSet, DB: rng.IntN(3), Key: key, Entry: shards.Entry{Kind: shards.KindBytes, Str: bytes.Repeat([]byte{byte(i)}, rng.IntN(300))}}
		case r < 95:
			e = Effect{Op: OpDel, DB: rng.IntN(3), Key: key}
		case r < 99:
			e = Effect{Op: OpFlushDB, DB: rng.IntN(3)}
		default:
			e = Effect{Op: OpFlushAll}
		}
		model.apply(e)
		off := l.Append(e)
		if rng.IntN(4) == 0 {
			if err := l.Sync(off); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(300) == 0 {
			if err := l.Rewrite(model.clone().freeze()); err != nil {
				t.Fatal(err)
			}
			st := l.Stats()
			if st.IncrSize != headerLen+st.PendingBytes && st.PendingBytes == 0 {
				t.Fatalf("after rewrite: %+v", st)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(fs.list()); n != 3 {
		t.Fatalf("files left: %v", fs.list())
	}
	s, _, l2, err := loadState(t, fs, FsyncAlways)
	defer l2.Close()
	if err != nil || !s.equal(model) {
		t.Fatalf("reload: %v\n%v\n%v", err, s, model)
	}
}

// TestRewriteWhileAppending runs appenders on the real file system while
// rewrites go on; after reload the state equals the model.
func TestRewriteWhileAppending(t *testing.T) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncNo} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			dir := t.TempDir()
			cfg := LogConfig{Dir: dir, Name: "appendonly.aof", Fsync: policy}
			l, err := OpenLog(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Load(func(Effect) error { return nil }); err != nil {
				t.Fatal(err)
			}
			ks := newKeyspace()
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var ops atomic.Int64
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						key := []byte(fmt.Sprintf("k%d", rng.IntN(200)))
						var e Effect
						switch r := rng.IntN(100); {
						case r < 70:
							e = Effect{Op: OpSet, DB: g % 2, Key: key, Entry: shards.IntEntry(int64(g)<<32|int64(i), int64(i))}
						case r < 99:
							e = Effect{Op: OpDel, DB: g % 2, Key: key}
						default:
							e = Effect{Op: OpFlushDB, DB: g % 2}
						}
						if err := l.Sync(ks.write(l, e)); err != nil {
							t.Error(err)
							return
						}
						ops.Add(1)
					}
				}()
			}
			// Rewrites with appends before, during and after each.
			const rewrites = 6
			for range rewrites {
				for start := ops.Load(); ops.Load() < start+200; {
					time.Sleep(time.Millisecond)
				}
				if err := l.Rewrite(ks.freeze); err != nil {
					t.Fatal(err)
				}
			}
			for start := ops.Load(); ops.Load() < start+200; {
				time.Sleep(time.Millisecond)
			}
			close(stop)
			wg.Wait()
			if st := l.Stats(); st.IncrSize <= headerLen {
				t.Fatalf("nothing appended after the last rewrite: %+v", st)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			want := ks.state()
			l2, err := OpenLog(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			got := state{}
			info, err := l2.Load(func(e Effect) error { got.apply(e); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !got.equal(want) {
				t.Fatalf("state after %d rewrites differs: %d keys loaded, %d in the model", rewrites, len(got), len(want))
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 3 {
				t.Fatalf("files left: %v", ents)
			}
			t.Logf("%d rewrites; %d keys, %d records loaded, %d bytes", rewrites, len(want), info.Records, info.Bytes)
		})
	}
}

func TestRewriteOneAtATime(t *testing.T) {
	l, _ := openMem(t, FsyncNo)
	l.Sync(l.Append(Effect{Op: OpDel, Key: []byte("x")}))
	in := make(chan struct{})
	out := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- l.Rewrite(frozen(func(EmitFunc) error { close(in); <-out; return nil }))
	}()
	<-in
	if !l.Stats().RewriteInFlight {
		t.Fatal("RewriteInFlight false")
	}
	if err := l.Rewrite(nil); !errors.Is(err, ErrRewriteInProgress) {
		t.Fatalf("second rewrite: %v", err)
	}
	// Writers are not held up by the dump.
	if err := l.Sync(l.Append(Effect{Op: OpDel, Key: []byte("y")})); err != nil {
		t.Fatal(err)
	}
	close(out)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRewriteFromFresh: a log started from data loaded elsewhere (e.g. a
// snapshot) gets that data as its first base.
func TestRewriteFromFresh(t *testing.T) {
	l, fs := openMem(t, FsyncAlways)
	seed := stateOf(smallEffects(50))
	if err := l.Rewrite(seed.freeze()); err != nil {
		t.Fatal(err)
	}
	e := Effect{Op: OpSet, DB: 0, Key: []byte("new"), Entry: shards.IntEntry(1, 0)}
	if err := l.Sync(l.Append(e)); err != nil {
		t.Fatal(err)
	}
	seed.apply(e)
	fs2 := fs.recovered(2) // power loss right now
	s, info, l2, err := loadState(t, fs2, FsyncAlways)
	defer l2.Close()
	if err != nil || !s.equal(seed) || info.Files != 2 {
		t.Fatalf("%v %+v", err, info)
	}
}

func TestWriteErrorRetried(t *testing.T) {
	l, fs := openMem(t, FsyncAlways)
	off := l.Append(Effect{Op: OpDel, Key: []byte("a")})
	if err := l.Sync(off); err != nil {
		t.Fatal(err)
	}
	fs.mu.Lock()
	fs.fault = func(op, name string) error {
		if op == "write" {
			return errors.New("ENOSPC")
		}
		return nil
	}
	fs.mu.Unlock()
	off = l.Append(Effect{Op: OpDel, Key: []byte("b")})
	if err := l.Sync(off); err == nil {
		t.Fatal("write error not reported")
	}
	if l.Stats().LastWriteErr == nil || l.Stats().PendingBytes == 0 {
		t.Fatalf("stats %+v", l.Stats())
	}
	fs.mu.Lock()
	fs.fault = nil
	fs.mu.Unlock()
	if err := l.Sync(off); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if st := l.Stats(); st.LastWriteErr != nil || st.PendingBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
	l.Close()
	var keys []string
	_, _, l2, err := loadState(t, fs, FsyncAlways)
	l2.Close()
	if err != nil {
		t.Fatal(err)
	}
	l3, _ := OpenLog(testCfg(fs, FsyncAlways))
	l3.Load(func(e Effect) error { keys = append(keys, string(e.Key)); return nil })
	l3.Close()
	if fmt.Sprint(keys) != "[a b]" {
		t.Fatalf("loaded %v", keys)
	}
}

func TestFsyncErrorIsPermanent(t *testing.T) {
	l, fs := openMem(t, FsyncAlways)
	l.Sync(l.Append(Effect{Op: OpDel, Key: []byte("a")}))
	fs.mu.Lock()
	fs.fault = func(op, name string) error {
		if op == "sync" {
			return errors.New("EIO")
		}
		return nil
	}
	fs.mu.Unlock()
	if err := l.Sync(l.Append(Effect{Op: OpDel, Key: []byte("b")})); err == nil {
		t.Fatal("fsync error not reported")
	}
	fs.mu.Lock()
	fs.fault = nil
	fs.mu.Unlock()
	if err := l.Sync(l.Append(Effect{Op: OpDel, Key: []byte("c")})); err == nil {
		t.Fatal("fsync error forgotten")
	}
	if st := l.Stats(); st.LastFsyncErr == nil {
		t.Fatalf("stats %+v", st)
	}
	if err := l.Rewrite(nil); err == nil {
		t.Fatal("rewrite after fsync error")
	}
}

// TestConcurrentAppendSync: many goroutines Append+Sync (run with -race).
func TestConcurrentAppendSync(t *testing.T) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncEverySec, FsyncNo} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			dir := t.TempDir()
			cfg := LogConfig{Dir: dir, Name: "a.aof", Fsync: policy}
			l, err := OpenLog(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Load(func(Effect) error { return nil }); err != nil {
				t.Fatal(err)
			}
			const G, N = 32, 200
			var wg sync.WaitGroup
			for g := range G {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var last int64
					for i := range N {
						off := l.Append(Effect{Op: OpSet, DB: g, Key: []byte(fmt.Sprint(i)), Entry: shards.IntEntry(int64(i), 0)})
						if off <= last {
							t.Errorf("offset went back: %d after %d", off, last)
						}
						last = off
						if err := l.Sync(off); err != nil {
							t.Error(err)
							return
						}
						_ = l.Stats()
					}
				}()
			}
			wg.Wait()
			st := l.Stats()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, _ := OpenLog(cfg)
			defer l2.Close()
			s := state{}
			info, err := l2.Load(func(e Effect) error { s.apply(e); return nil })
			if err != nil || info.Records != G*N || len(s) != G*N {
				t.Fatalf("%v %+v %d", err, info, len(s))
			}
			t.Logf("%d effects, %d writes, %d fsyncs", st.Effects, st.Writes, st.Fsyncs)
		})
	}
}

func TestAppendZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	l, _ := openMem(t, FsyncNo)
	e := Effect{Op: OpSet, DB: 3, Key: []byte("user:12345"), Entry: shards.IntEntry(1_700_000_000_000_000_000, 1_700_000_000_000_000_000)}
	var off int64
	for range 1000 { // grow the buffers
		off = l.Append(e)
	}
	l.Sync(off)
	allocs := testing.AllocsPerRun(1000, func() {
		for range 100 {
			off = l.Append(e)
		}
		l.Sync(off)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per 100 Appends + Sync", allocs)
	}
}

func TestOpenLogBadConfig(t *testing.T) {
	for _, cfg := range []LogConfig{
		{Dir: "/d", Name: ""},
		{Dir: "/d", Name: "a/b"},
		{Dir: "/d", Name: "a b"},
		{Dir: "/d", Name: "a", Fsync: 7},
	} {
		cfg.FS = newCrashFS(1)
		if _, err := OpenLog(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

func TestRewriteDue(t *testing.T) {
	l, fs := openMem(t, FsyncNo)
	if l.RewriteDue(100, 0) {
		t.Fatal("due before anything was written")
	}
	e := Effect{Op: OpSet, Key: []byte("k"), Entry: shards.Entry{Kind: shards.KindBytes, Str: make([]byte, 1000)}}
	l.Sync(l.Append(e))
	st := l.Stats()
	if st.RewriteBase != st.BaseSize+headerLen {
		t.Fatalf("%+v", st)
	}
	if !l.RewriteDue(100, 0) || l.RewriteDue(100, 1<<20) || l.RewriteDue(0, 0) {
		t.Fatal("growth from an empty log")
	}
	if err := l.Rewrite(state{{0, "k"}: e.Entry}.freeze()); err != nil {
		t.Fatal(err)
	}
	if l.RewriteDue(100, 0) {
		t.Fatalf("due right after a rewrite: %+v", l.Stats())
	}
	for range 2 {
		l.Sync(l.Append(e))
	}
	if !l.RewriteDue(100, 0) || l.RewriteDue(300, 0) {
		t.Fatalf("%+v", l.Stats())
	}
	l.Close()
	// After a restart the loaded size is the reference.
	_, _, l2, err := loadState(t, fs, FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if st := l2.Stats(); l2.RewriteDue(1, 0) || st.RewriteBase != st.BaseSize+st.IncrSize {
		t.Fatalf("%+v", st)
	}
}

// TestEverySecRealTicker: with the real one-second ticker, what Sync wrote
// is fsynced in the background.
func TestEverySecRealTicker(t *testing.T) {
	l, err := OpenLog(LogConfig{Dir: t.TempDir(), Name: "a.aof", Fsync: FsyncEverySec})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Load(func(Effect) error { return nil })
	if err := l.Sync(l.Append(Effect{Op: OpDel, Key: []byte("k")})); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Stats().Fsyncs == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no fsync within 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if l.synced.Load() != l.written.Load() {
		t.Fatal("fsync did not cover what was written")
	}
}
