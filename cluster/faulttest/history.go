package faulttest

import (
	"fmt"
	"math"
)

// Kind is the command an operation ran.
type Kind uint8

const (
	Get Kind = iota
	Set
	Incr
	Throttle // CL.THROTTLE key B count period (quantity 1)
)

func (k Kind) String() string {
	return [...]string{"GET", "SET", "INCR", "CL.THROTTLE"}[k]
}

// Outcome is what the client learned about an operation.
type Outcome uint8

const (
	// OK: the server replied normally; Value, Exists and Allowed hold
	// the reply.
	OK Outcome = iota
	// Failed: the operation certainly had no effect (the client could not
	// even connect, so the command was never sent; or the reply was
	// CLUSTERDOWN: no leader was known, so the command was not run).
	Failed
	// Unknown: the client never learned whether it took effect (a
	// timeout, a connection that died after the command was sent, or an
	// error reply to a write, e.g. TRYAGAIN after a lost leadership).
	Unknown
)

func (o Outcome) String() string { return [...]string{"ok", "failed", "unknown"}[o] }

// Op is one operation a client ran, with the times (nanoseconds since the
// history's start, on the test's monotonic clock) it was invoked and it
// returned.
type Op struct {
	Client  int
	Node    int // the node the client sent it to
	Kind    Kind
	Key     string
	Arg     string // SET's value
	Call    int64
	Return  int64
	Outcome Outcome
	Exists  bool   // GET: the key existed
	Value   string // GET's value, INCR's result (decimal)
	Allowed bool   // CL.THROTTLE: the first reply element was 0
	Err     string // the error, for Failed and Unknown
	Reply   bool   // Err is the server's error reply (not a timeout or a broken connection)
	Final   bool   // a read of the final state, after every other op
}

func (op Op) String() string {
	var res string
	switch {
	case op.Outcome != OK:
		res = op.Outcome.String() + " (" + op.Err + ")"
	case op.Kind == Get && !op.Exists:
		res = "nil"
	case op.Kind == Get || op.Kind == Incr:
		res = fmt.Sprintf("%q", op.Value)
	case op.Kind == Throttle && op.Allowed:
		res = "allowed"
	case op.Kind == Throttle:
		res = "limited"
	default:
		res = "OK"
	}
	arg := ""
	if op.Kind == Set {
		arg = fmt.Sprintf(" %q", op.Arg)
	}
	end := "∞"
	if op.Return != math.MaxInt64 {
		end = fmt.Sprintf("%.3fs", float64(op.Return)/1e9)
	}
	return fmt.Sprintf("c%d@n%d [%.3fs, %s] %s %s%s -> %s", op.Client, op.Node,
		float64(op.Call)/1e9, end, op.Kind, op.Key, arg, res)
}

// History is the operations of every client of one run, in no order.
type History []Op

// byKey groups the operations of h by key, keeping their order.
func (h History) byKey() map[string][]Op {
	m := map[string][]Op{}
	for _, op := range h {
		m[op.Key] = append(m[op.Key], op)
	}
	return m
}

// Count returns how many operations of h have each outcome.
func (h History) Count() (ok, failed, unknown int) {
	for _, op := range h {
		switch op.Outcome {
		case OK:
			ok++
		case Failed:
			failed++
		default:
			unknown++
		}
	}
	return ok, failed, unknown
}
