package cluster

import (
	"bytes"
	"testing"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

func sampleUnits() [][]persistence.Effect {
	return [][]persistence.Effect{
		{{Op: persistence.OpSet, Key: []byte("a"), Entry: shards.IntEntry(7, 123)}},
		{},
		{{Op: persistence.OpDel, DB: 3, Key: []byte("b")}, {Op: persistence.OpFlushDB, DB: 2}},
		{{Op: persistence.OpRange, DB: 1, Key: []byte("s"), Off: 3, Len: 9, Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("abc")}}},
	}
}

func encodeSample(units [][]persistence.Effect) []byte {
	data := appendBatchHeader(nil, 42, 9, len(units), 1_700_000_000)
	for _, u := range units {
		data = appendUnit(data, u)
	}
	return data
}

func TestBatchRoundTrip(t *testing.T) {
	units := sampleUnits()
	data := encodeSample(units)
	h, err := decodeBatch(data)
	if err != nil || h.token != 42 || h.first != 9 || h.count != len(units) || h.now != 1_700_000_000 {
		t.Fatalf("header %+v, %v", h, err)
	}
	i := 0
	err = h.eachUnit(func(records []byte) error {
		var want []byte
		for j := range units[i] {
			want = persistence.AppendEffect(want, &units[i][j])
		}
		if !bytes.Equal(records, want) {
			t.Errorf("unit %d: %x, want %x", i, records, want)
		}
		i++
		return nil
	})
	if err != nil || i != len(units) {
		t.Fatalf("eachUnit: %d units, %v", i, err)
	}
	for cut := 1; cut < len(data); cut++ {
		h, err := decodeBatch(data[:cut])
		if err == nil {
			err = h.eachUnit(func([]byte) error { return nil })
		}
		if err == nil {
			t.Fatalf("batch cut at %d of %d decoded", cut, len(data))
		}
	}
}

// FuzzDecodeEntry: no entry data panics the state machine's decoders.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeSample(sampleUnits()))
	f.Add(encodeMeta(metaChange{Op: "set", ID: "n1", RESP: "127.0.0.1:7000"}))
	f.Add(encodeMeta(metaChange{Op: "script", Script: []byte("return 1")}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := decodeBatch(data); err == nil {
			h.eachUnit(func(records []byte) error {
				return persistence.DecodeEffects(records, func(*persistence.Effect) error { return nil })
			})
		}
		decodeMeta(data)
	})
}
