package cluster

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnstile/turnstile/persistence"
)

// A Raft entry's data is one of these kinds, named by its first byte.
const (
	entryUnits byte = 1 // a batch of units of effects (batch)
	entryMeta  byte = 2 // a change to the node table (metaChange, JSON)
)

// batch is the header of an entryUnits entry:
//
//	kind 1 | token u64 | first u64 | count uvarint | now i64 | count × (len u32, records)
//
// token names the leadership epoch of the node that wrote it (a random
// number, never 0), first the sequence number of its first unit on that
// node, now the leader's clock when it cut the batch (at or after the now
// of every unit in it).
type batch struct {
	token uint64
	first int64
	count int
	now   int64
	units []byte // count × (u32 length, records)
}

const batchHeaderMax = 1 + 8 + 8 + binary.MaxVarintLen64 + 8

// appendBatchHeader writes the header of a batch whose units follow.
func appendBatchHeader(dst []byte, token uint64, first int64, count int, now int64) []byte {
	dst = append(dst, entryUnits)
	dst = binary.LittleEndian.AppendUint64(dst, token)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(first))
	dst = binary.AppendUvarint(dst, uint64(count))
	return binary.LittleEndian.AppendUint64(dst, uint64(now))
}

// appendUnit appends one unit to dst: a 4-byte length, then its effects
// as framed records, encoded in place.
func appendUnit(dst []byte, effects []persistence.Effect) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for i := range effects {
		dst = persistence.AppendEffect(dst, &effects[i])
	}
	binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

func decodeBatch(b []byte) (batch, error) {
	var h batch
	if len(b) < 1+8+8 || b[0] != entryUnits {
		return h, errors.New("cluster: not a batch entry")
	}
	h.token = binary.LittleEndian.Uint64(b[1:])
	h.first = int64(binary.LittleEndian.Uint64(b[9:]))
	n, k := binary.Uvarint(b[17:])
	if k <= 0 || n > uint64(len(b)) {
		return h, errors.New("cluster: batch entry with a bad unit count")
	}
	h.count = int(n)
	rest := b[17+k:]
	if len(rest) < 8 {
		return h, errors.New("cluster: batch entry cut short")
	}
	h.now = int64(binary.LittleEndian.Uint64(rest))
	h.units = rest[8:]
	return h, nil
}

// eachUnit calls fn with the records of each unit of the batch.
func (h batch) eachUnit(fn func(records []byte) error) error {
	b := h.units
	for i := 0; i < h.count; i++ {
		if len(b) < 4 {
			return fmt.Errorf("cluster: unit %d of %d cut short", i, h.count)
		}
		n := uint64(binary.LittleEndian.Uint32(b))
		if n > uint64(len(b)-4) {
			return fmt.Errorf("cluster: unit %d of %d cut short", i, h.count)
		}
		if err := fn(b[4 : 4+n]); err != nil {
			return err
		}
		b = b[4+n:]
	}
	if len(b) != 0 {
		return fmt.Errorf("cluster: %d bytes after the last unit of a batch", len(b))
	}
	return nil
}

// metaChange is an entryMeta entry: a node's client address is set or
// removed (followers forward to the leader's address from this table), or
// a script loaded on the leader is shared (EVALSHA after a failover).
type metaChange struct {
	Op     string `json:"op"` // "set", "remove" or "script"
	ID     string `json:"id,omitempty"`
	RESP   string `json:"resp,omitempty"`
	Script []byte `json:"script,omitempty"` // base64 in JSON: any bytes
}

func encodeMeta(m metaChange) []byte {
	b, _ := json.Marshal(m) // strings only: cannot fail
	return append([]byte{entryMeta}, b...)
}

func decodeMeta(b []byte) (metaChange, error) {
	var m metaChange
	if len(b) < 1 || b[0] != entryMeta {
		return m, errors.New("cluster: not a meta entry")
	}
	if err := json.Unmarshal(b[1:], &m); err != nil {
		return m, fmt.Errorf("cluster: meta entry: %w", err)
	}
	switch {
	case m.Op == "script" && len(m.Script) > 0:
	case (m.Op == "set" || m.Op == "remove") && m.ID != "":
	default:
		return m, fmt.Errorf("cluster: meta entry %+v", m)
	}
	return m, nil
}
