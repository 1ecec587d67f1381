package server

import (
	"errors"
	"math"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/gcra"
	"github.com/turnstile/turnstile/shards"
)

func throttleCommands() []*Command {
	return []*Command{
		// Registered like redis-cell: flag "write" only, arity -1 (the
		// handler checks the argument count and answers with the usage text).
		{Name: "cl.throttle", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key max_burst:integer count_per_period:integer period:integer [quantity:integer]", Complexity: "O(1)", Arity: -1, Flags: command.Write | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "module", Since: "0.5.0", Summary: "Rate limits a key with GCRA (redis-cell compatible).",
			Handler: cmdThrottle},
	}
}

// CL.THROTTLE error replies, byte-compatible with redis-cell (no ERR prefix).
const (
	cellPrefix     = "Cell error: Store error: "
	errCellUsage   = cellPrefix + "Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
	errCellParse   = cellPrefix + "Couldn't parse as integer: "
	errCellStorage = cellPrefix + "Stored value is not a valid timestamp"
)

// cmdThrottle implements
//
//	CL.THROTTLE <key> <max_burst> <count per period> <period> [<quantity>]
//
// and replies [limited, limit, remaining, retry_after, reset_after]. The
// key's shard is locked by the dispatcher, so reading the TAT, deciding and
// writing the new TAT are one atomic step.
func cmdThrottle(x *Ctx) {
	args := x.args
	if len(args) != 5 && len(args) != 6 {
		x.w.Error(errCellUsage)
		return
	}
	var nums [4]int64
	nums[3] = 1 // quantity defaults to 1
	for i := 2; i < len(args); i++ {
		n, ok := parseCellInt(args[i])
		if !ok {
			x.w.Error(errCellParse + string(args[i]))
			return
		}
		nums[i-2] = n
	}
	q, err := gcra.NewQuota(nums[0], nums[1], nums[2])
	if err != nil {
		x.w.Error(cellPrefix + quotaErrorText(err))
		return
	}
	key := args[1]
	x.noteHot(key)
	var e shards.Entry
	var ref shards.Ref
	found := x.lookupForSetInto(key, &e, &ref)
	tat, errText := loadTAT(e, found)
	if errText != "" {
		x.w.Error(errText) // only for a live key: nothing to discard
		return
	}
	r := gcra.Decide(tat, found, x.now, q, nums[3])
	x.s.stats.decided(x.cmd, !r.Limited)
	switch r.Action {
	case gcra.Store:
		x.set(ref, key, shards.IntEntry(r.NewTAT, r.NewTAT))
	case gcra.Delete:
		x.discard(ref)
		x.del(key)
	default:
		x.discard(ref)
	}
	reply := r.Reply()
	x.w.Array(len(reply))
	for _, v := range reply {
		x.w.Int(v)
	}
}

func quotaErrorText(err error) string {
	for _, e := range []error{gcra.ErrZeroRate, gcra.ErrNegative, gcra.ErrBurstTooLarge} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return err.Error()
}

// loadTAT reads the stored theoretical arrival time. Like redis-cell, any
// string holding an unsigned 64-bit decimal is a TAT in Unix ns (values past
// the int64 range saturate to year 2262). Other values are an error reply,
// where redis-cell would abort the server.
func loadTAT(e shards.Entry, found bool) (tat int64, errText string) {
	switch {
	case !found:
		return 0, ""
	case e.Kind == shards.KindInt:
		if e.Int < 0 {
			return 0, errCellStorage
		}
		return e.Int, ""
	case e.Kind == shards.KindBytes:
		u, ok := parseCellUint(e.Bytes())
		if !ok {
			return 0, errCellStorage
		}
		return int64(min(u, math.MaxInt64)), ""
	}
	return 0, errWrongType
}

// parseCellInt parses like Rust's str::parse::<i64>: an optional '+' or '-',
// then one or more ASCII digits, nothing else, within the int64 range.
func parseCellInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	u, ok := parseDigits(b)
	switch {
	case !ok:
		return 0, false
	case neg && u <= 1<<63:
		return int64(-u), true // -(1<<63) wraps to itself: MinInt64
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// parseCellUint parses like Rust's str::parse::<u64>: an optional '+', then
// one or more ASCII digits.
func parseCellUint(b []byte) (uint64, bool) {
	if len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	return parseDigits(b)
}

// parseDigits parses one or more ASCII digits into a uint64, rejecting
// overflow.
func parseDigits(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	return u, true
}
