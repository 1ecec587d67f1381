package persistence

import (
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// FuzzDecodeRecord: arbitrary bytes, as a framed record and as a bare
// payload (the checksums keep the fuzzer away from the payload decoder
// otherwise), never panic; a payload that decodes re-encodes into a record
// that decodes to the same effect (or GROUP record).
func FuzzDecodeRecord(f *testing.F) {
	effs := sampleEffects()
	for i := range effs {
		if len(effs[i].Key)+len(effs[i].Entry.Str) < 1000 {
			r := appendRecord(nil, &effs[i])
			f.Add(r)
			f.Add(r[recHeaderLen:])
		}
	}
	f.Add(appendEndRecord(nil, 7))
	for _, g := range [][2]uint64{{2, 25}, {300, 70000}} {
		r := appendGroupRecord(nil, g[0], g[1])
		f.Add(r)
		f.Add(r[recHeaderLen:])
	}
	f.Add(make([]byte, 20))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Effect
		decodeRecord(b, &e)
		m, reason := decodePayload(b, &e)
		if reason == "" && m.kind == recGroup {
			rec := appendGroupRecord(nil, m.count, m.length)
			n, m2, err := decodeRecord(rec, &e)
			if err != nil || n != len(rec) || m2 != m {
				t.Fatalf("round trip of %+v: %+v, %v", m, m2, err)
			}
			return
		}
		if reason != "" || m.kind != recEffect {
			return
		}
		rec := appendRecord(nil, &e)
		var e2 Effect
		n, m, err := decodeRecord(rec, &e2)
		if err != nil || m.kind != recEffect || n != len(rec) || !effectsEqual(e, e2) {
			t.Fatalf("round trip of %+v: %+v, %v", e, e2, err)
		}
	})
}

// FuzzLoad: arbitrary bytes as the incremental file, the base, a snapshot
// or a manifest never panic and never allocate beyond the input's size.
func FuzzLoad(f *testing.F) {
	fs, incr := writeLog(f, smallEffects(8))
	f.Add(fs.get(incr), uint8(0))
	groups, _ := writeUnits(f, groupUnits())
	f.Add(groups.get(incr), uint8(0))
	f.Add(fs.get(testDir+"/"+testName+".manifest"), uint8(3))
	snap := newCrashFS(1)
	snap.MkdirAll("/data", 0o755)
	WriteSnapshot(snap, snapPath, snapState(false).dump())
	f.Add(snap.get(snapPath), uint8(1))
	f.Add(snap.get(snapPath), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		c := fs.clone()
		var target string
		switch which % 4 {
		case 0:
			target = incr
		case 1:
			target = testDir + "/" + testName + ".1.base"
		case 2:
			target = snapPath
		case 3:
			target = testDir + "/" + testName + ".manifest"
		}
		c.set(target, b)
		if which%4 == 2 {
			LoadSnapshot(c, snapPath, func(int, []byte, shards.Entry) error { return nil })
		} else {
			l, err := OpenLog(testCfg(c, FsyncNo))
			if err != nil {
				t.Fatal(err)
			}
			l.Load(func(Effect) error { return nil })
			l.Close()
		}
		Check(c.clone(), target)
		FixForce(c.clone(), target)
	})
}
