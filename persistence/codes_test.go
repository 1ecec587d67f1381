package persistence

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// TestCodesPinned: the on-disk codes have the numbers FORMAT.md gives them,
// whatever the in-memory enums are. The numbers here are written out, not
// taken from the constants: they must never change.
func TestCodesPinned(t *testing.T) {
	for _, c := range []struct {
		op   Op
		code byte
	}{{OpSet, 1}, {OpDel, 2}, {OpFlushDB, 3}, {OpFlushAll, 4}} {
		if got, ok := opCode(c.op); !ok || got != c.code {
			t.Errorf("opCode(%d) = %d, %v; want %d", c.op, got, ok, c.code)
		}
		if got, ok := opOf(c.code); !ok || got != c.op {
			t.Errorf("opOf(%d) = %d, %v; want %d", c.code, got, ok, c.op)
		}
	}
	if opcodeEnd != 0xFF {
		t.Errorf("opcodeEnd = %#x, want 0xff", opcodeEnd)
	}
	if opcodeGroup != 0xFE { // format version 3
		t.Errorf("opcodeGroup = %#x, want 0xfe", opcodeGroup)
	}
	for _, c := range []struct {
		kind shards.Kind
		code byte
	}{{shards.KindInt, 1}, {shards.KindBytes, 2}} {
		if got, ok := valueCode(c.kind); !ok || got != c.code {
			t.Errorf("valueCode(%d) = %d, %v; want %d", c.kind, got, ok, c.code)
		}
		if got, ok := kindOf(c.code); !ok || got != c.kind {
			t.Errorf("kindOf(%d) = %d, %v; want %d", c.code, got, ok, c.kind)
		}
	}
	// Format version 2: collections, EXPIRE and FIELD.
	for _, c := range []struct {
		kind shards.Kind
		code byte
	}{{shards.KindHash, 3}, {shards.KindList, 4}, {shards.KindSet, 5}, {shards.KindZSet, 6}, {shards.KindStream, 7}} {
		if got, ok := valueCode(c.kind); !ok || got != c.code {
			t.Errorf("valueCode(%d) = %d, %v; want %d", c.kind, got, ok, c.code)
		}
		if got, ok := kindOf(c.code); !ok || got != c.kind {
			t.Errorf("kindOf(%d) = %d, %v; want %d", c.code, got, ok, c.kind)
		}
	}
	if opcodeExpire != 5 || opcodeField != 6 {
		t.Errorf("EXPIRE and FIELD codes are %d %d, want 5 6", opcodeExpire, opcodeField)
	}
	for i, f := range fieldCodes {
		if int(f.code) != i+1 {
			t.Errorf("field op %s has code %d, want %d", f.op, f.code, i+1)
		}
		if op, ok := fieldOp(f.code); !ok || op != f.op {
			t.Errorf("fieldOp(%d) = %s", f.code, op)
		}
	}
	if opcodeRange != 7 { // format version 4
		t.Errorf("RANGE code is %d, want 7", opcodeRange)
	}
	if got, ok := opOf(7); !ok || got != OpRange {
		t.Errorf("opOf(7) = %d, %v; want OpRange", got, ok)
	}
	// Still reserved.
	for code := 8; code <= 31; code++ {
		if op, ok := opOf(byte(code)); ok {
			t.Errorf("reserved op code %d is read as op %d", code, op)
		}
	}
}

// TestCodeMappings: the mappings are inverse to each other over every byte
// value, and no op code is 0 or a framing code (END, GROUP).
func TestCodeMappings(t *testing.T) {
	for i := range 256 {
		if code, ok := opCode(Op(i)); ok {
			if code == 0 || code == opcodeEnd || code == opcodeGroup {
				t.Errorf("op %d has code %#x", i, code)
			}
			if op, ok := opOf(code); !ok || op != Op(i) {
				t.Errorf("op %d -> code %d -> %d, %v", i, code, op, ok)
			}
		}
		if op, ok := opOf(byte(i)); ok {
			if code, ok := opCode(op); !ok || code != byte(i) {
				t.Errorf("code %d -> op %d -> %d, %v", i, op, code, ok)
			}
		}
		if code, ok := valueCode(shards.Kind(i)); ok {
			if k, ok := kindOf(code); !ok || k != shards.Kind(i) {
				t.Errorf("kind %d -> code %d -> %d, %v", i, code, k, ok)
			}
		}
		if k, ok := kindOf(byte(i)); ok {
			if code, ok := valueCode(k); !ok || code != byte(i) {
				t.Errorf("code %d -> kind %d -> %d, %v", i, k, code, ok)
			}
		}
	}
}

// TestUnknownKind: an entry kind the format has no code for cannot be
// logged or dumped, and an unknown value code in a file is corruption.
func TestUnknownKind(t *testing.T) {
	for i := range 256 {
		k := shards.Kind(i)
		if _, ok := valueCode(k); ok {
			continue
		}
		e := Effect{Op: OpSet, Key: []byte("k"), Entry: shards.Entry{Kind: k}}
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, fmt.Sprintf("cannot log entry kind %d", k)) {
					t.Errorf("kind %d: appendRecord panicked with %q", k, msg)
				}
			}()
			appendRecord(nil, &e)
		}()
		d := &dumpWriter{}
		if err := d.emit(0, []byte("k"), e.Entry); err == nil || !strings.Contains(err.Error(), "cannot dump entry kind") {
			t.Errorf("kind %d: emit returned %v", k, err)
		}
	}
	for i := range 256 {
		if _, ok := kindOf(byte(i)); ok {
			continue
		}
		p := []byte{opcodeSet, 0, 1, 'k', byte(i), 0, 0}
		var e Effect
		if _, reason := decodePayload(p, &e); reason != fmt.Sprintf("unknown value kind %d", i) {
			t.Errorf("value code %d: reason %q", i, reason)
		}
	}
}

// TestOpInDumpNamesFileCode: a dump holding a record other than SET is
// reported with the file's op code.
func TestOpInDumpNamesFileCode(t *testing.T) {
	fs := newCrashFS(1)
	fs.MkdirAll("/data", 0o755)
	b := appendHeader(nil, FileDump)
	b = appendRecord(b, &Effect{Op: OpDel, Key: []byte("k")})
	b = appendEndRecord(b, 0)
	fs.set(snapPath, b)
	_, err := LoadSnapshot(fs, snapPath, func(int, []byte, shards.Entry) error { return nil })
	ce, ok := err.(*CorruptError)
	if !ok || ce.Offset != headerLen || ce.Reason != fmt.Sprintf("op %d in a dump", opcodeDel) {
		t.Fatalf("got %v", err)
	}
	if !bytes.Equal(fs.get(snapPath), b) {
		t.Fatal("LoadSnapshot changed the file")
	}
}
