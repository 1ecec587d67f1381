package script

// Keyspace is an optional interface of a Caller: direct forms of the
// string commands simple natives send, without a command line to look up
// and a reply to parse. Each method must be indistinguishable from the
// Call it stands for: the same reply, the same keyspace state (value
// bytes, encoding, expiry, access stamps), the same effects for the log
// and the same side effects (command statistics, refusals, errors
// counted). A host that cannot give that in some state (a restricted
// user, a MONITOR, client-side caching) answers ok false.
//
// Natives reach it through timeCall, getCall, pttlCall, setEXCall and
// setexCall, which use Call for a Caller without it and when a method
// answers ok false.
type Keyspace interface {
	// Time is TIME: the execution's clock in seconds and microseconds.
	Time() (secs, micros int64, ok bool)
	// Get is GET key. The reply's Str stays valid until the next call.
	Get(key []byte) (r Reply, ok bool)
	// PTTL is PTTL key.
	PTTL(key []byte) (r Reply, ok bool)
	// SetEX is SET key value EX seconds, and Setex is SETEX key seconds
	// value sent as name. value and seconds stay valid until the execution
	// ends (Number's memory, or the script's arguments).
	SetEX(key, value, seconds []byte) (r Reply, ok bool)
	Setex(name, key, seconds, value []byte) (r Reply, ok bool)
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

// pttlCall runs PTTL key, sent as name.
func pttlCall(c Caller, name, key []byte) Reply {
	if k, fast := c.(Keyspace); fast {
		if r, ok := k.PTTL(key); ok {
			return r
		}
	}
	return c.Call(name, key)
}

// setEXCall runs SET key <Number(value)> EX <Number(seconds)>.
func setEXCall(c Caller, key []byte, value, seconds float64) Reply {
	v, secs := c.Number(value), c.Number(seconds)
	if k, fast := c.(Keyspace); fast {
		if r, ok := k.SetEX(key, v, secs); ok {
			return r
		}
	}
	return c.Call(cmdSET, key, v, argEX, secs)
}

// setexCall runs SETEX key seconds value, sent as name.
func setexCall(c Caller, name, key, seconds, value []byte) Reply {
	if k, fast := c.(Keyspace); fast {
		if r, ok := k.Setex(name, key, seconds, value); ok {
			return r
		}
	}
	return c.Call(name, key, seconds, value)
}
