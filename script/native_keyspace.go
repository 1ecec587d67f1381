package script

import "math"

// Keyspace is an optional interface of a Caller: direct forms of the
// string commands simple natives send, without a command line to look up
// and a reply to parse. Each method must be indistinguishable from the
// Call it stands for: the same reply, the same keyspace state (value
// bytes, encoding, expiry, access stamps), the same effects for the log
// and the same side effects (command statistics, refusals, errors
// counted). A host that cannot give that in some state (a restricted
// user, a MONITOR, client-side caching) answers ok false.
//
// Natives reach it through timeCall, getCall and setEXCall, which use
// Call for a Caller without it and when a method answers ok false.
type Keyspace interface {
	// Time is TIME: the execution's clock in seconds and microseconds.
	Time() (secs, micros int64, ok bool)
	// Get is GET key. The reply's Str stays valid until the next call.
	Get(key []byte) (r Reply, ok bool)
	// SetEX is SET key value EX <Number(seconds)>. value comes from Number
	// (it stays valid until the execution ends).
	SetEX(key, value []byte, seconds float64) (r Reply, ok bool)
}

// Each method reports ok false, having done nothing, when the command must
// go through Call instead: the native then calls it with the name its
// script sends (which a MONITOR shows).

// timeCall runs TIME: seconds and microseconds, as the script reads them
// from TIME's two strings; ok is false when the reply is not two fields
// (TIME cannot fail: a broken reply is reported, not indexed).
func timeCall(c Caller) (secs, micros float64, ok bool) {
	if k, fast := c.(Keyspace); fast {
		if s, us, ok := k.Time(); ok {
			return float64(s), float64(us), true // what ArithNumber reads from their decimal forms
		}
	}
	r := c.Call(cmdTIME)
	if len(r.Elems) != 2 {
		return 0, 0, false
	}
	secs, _ = ArithNumber(r.Elems[0].Str)
	micros, _ = ArithNumber(r.Elems[1].Str)
	return secs, micros, true
}

// getCall runs GET key, sent as name.
func getCall(c Caller, name, key []byte) Reply {
	if k, fast := c.(Keyspace); fast {
		if r, ok := k.Get(key); ok {
			return r
		}
	}
	return c.Call(name, key)
}

// setEXCall runs SET key <Number(value)> EX <Number(seconds)>.
func setEXCall(c Caller, key []byte, value, seconds float64) Reply {
	v := c.Number(value)
	if k, fast := c.(Keyspace); fast {
		if r, ok := k.SetEX(key, v, seconds); ok {
			return r
		}
	}
	return c.Call(cmdSET, key, v, argEX, c.Number(seconds))
}

// WholeSeconds reports whether seconds, formatted by Number, is a decimal
// integer that SET's EX accepts as it is (1 up to below 10^15, where
// "%.17g" prints every digit and no exponent): then n is its value. A
// Keyspace's SetEX takes its direct path for those only.
func WholeSeconds(seconds float64) (n int64, ok bool) {
	if seconds >= 1 && seconds < 1e15 && seconds == math.Trunc(seconds) {
		return int64(seconds), true
	}
	return 0, false
}
