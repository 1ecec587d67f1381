package persistence

import (
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// FuzzDecodeRecord: arbitrary bytes, as a framed record and as a bare
// payload (the checksums keep the fuzzer away from the payload decoder
// otherwise), never panic; a payload that decodes re-encodes into a record
// that decodes to the same effect.
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
	f.Add(make([]byte, 20))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Effect
		decodeRecord(b, &e)
		end, _, reason := decodePayload(b, &e)
		if reason != "" || end {
			return
		}
		rec := appendRecord(nil, &e)
		var e2 Effect
		n, end, _, err := decodeRecord(rec, &e2)
		if err != nil || end || n != len(rec) || !effectsEqual(e, e2) {
			t.Fatalf("round trip of %+v: %+v, %v", e, e2, err)
		}
	})
}

// FuzzLoad: arbitrary bytes as the incremental file, the base, a snapshot
// or a manifest never panic and never allocate beyond the input's size.
func FuzzLoad(f *testing.F) {
	fs, incr := writeLog(f, smallEffects(8))
	f.Add(fs.get(incr), uint8(0))
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
