package resp

// The integer grammar of the protocol: request headers, integer
// arguments, and the values the keyspace stores in integer form.

// ParseInt parses b when it is exactly the canonical decimal form of an
// int64 (no sign other than a leading '-', no leading zeros, no "-0"),
// which is when Redis stores a string with the int encoding and when INCR
// accepts it.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
		if len(b) == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	// u stays at most 2^63 (the magnitude of math.MinInt64), so checking it
	// against 2^63/10 before multiplying keeps u*10+9 below 2^63+10: it
	// never wraps around in uint64.
	var u uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return int64(-u), true // -(1<<63) wraps to itself, which is correct
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}
