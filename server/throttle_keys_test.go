package server

import (
	"strconv"
	"testing"
	"time"
)

// TestThrottleKeyAsSeenByKeyCommands checks that a CL.THROTTLE key answers
// GET, TTL, PTTL, TYPE, EXISTS and DEL as it would on Redis with redis-cell,
// and that other stored values give the documented errors.
func TestThrottleKeyAsSeenByKeyCommands(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	if got := rc.do("CL.THROTTLE", "u", "15", "30", "60"); got != "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n" {
		t.Fatalf("first call: %q", got)
	}
	tat := strconv.FormatInt(testEpoch+2e9, 10) // one token: E = 60 s / 30 = 2 s
	steps := []struct {
		cmd  []string
		want string
	}{
		{[]string{"GET", "u"}, "$" + strconv.Itoa(len(tat)) + "\r\n" + tat + "\r\n"},
		{[]string{"PTTL", "u"}, ":2000\r\n"},
		{[]string{"TTL", "u"}, ":2\r\n"},
		{[]string{"TYPE", "u"}, "+string\r\n"},
		{[]string{"EXISTS", "u"}, ":1\r\n"},
		{[]string{"STRLEN", "u"}, ":19\r\n"},
	}
	for _, st := range steps {
		if got := rc.do(st.cmd...); got != st.want {
			t.Errorf("%v: got %q, want %q", st.cmd, got, st.want)
		}
	}
	// The key expires exactly when the bucket is full again.
	clk.Advance(2*time.Second - 1)
	if got := rc.do("EXISTS", "u"); got != ":1\r\n" {
		t.Errorf("before the TAT: %q", got)
	}
	clk.Advance(1)
	if got := rc.do("EXISTS", "u"); got != ":0\r\n" {
		t.Errorf("at the TAT: %q", got)
	}
	// DEL resets a limiter.
	for i := 0; i < 16; i++ {
		rc.do("CL.THROTTLE", "u", "15", "30", "60")
	}
	if got := rc.do("CL.THROTTLE", "u", "15", "30", "60"); got[:6] != "*5\r\n:1" {
		t.Fatalf("17th call not limited: %q", got)
	}
	if got := rc.do("DEL", "u"); got != ":1\r\n" {
		t.Fatalf("DEL: %q", got)
	}
	if got := rc.do("CL.THROTTLE", "u", "15", "30", "60"); got != "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n" {
		t.Fatalf("after DEL: %q", got)
	}
	// A TAT planted with SET is honoured, like redis-cell: 60 s ahead.
	future := strconv.FormatInt(clk.Now()+60e9, 10)
	rc.do("SET", "p", future)
	if got := rc.do("CL.THROTTLE", "p", "15", "30", "60"); got != "*5\r\n:1\r\n:16\r\n:0\r\n:30\r\n:60\r\n" {
		t.Errorf("planted TAT: %q", got)
	}
	if got := rc.do("TTL", "p"); got != ":-1\r\n" {
		t.Errorf("a limited call must not touch the TTL: %q", got)
	}
	// Values redis-cell would crash on are errors here.
	rc.do("SET", "bad", "abc")
	if got := rc.do("CL.THROTTLE", "bad", "15", "30", "60"); got != "-Cell error: Store error: Stored value is not a valid timestamp\r\n" {
		t.Errorf("garbage value: %q", got)
	}
	rc.do("SET", "neg", "-5")
	if got := rc.do("CL.THROTTLE", "neg", "15", "30", "60"); got != "-Cell error: Store error: Stored value is not a valid timestamp\r\n" {
		t.Errorf("negative value: %q", got)
	}
	rc.do("SET", "plus", "+007")
	if got := rc.do("CL.THROTTLE", "plus", "15", "30", "60"); got != "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n" {
		t.Errorf("u64-parseable old TAT: %q", got)
	}
	putNonString(s, "h")
	if got := rc.do("CL.THROTTLE", "h", "15", "30", "60"); got != "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n" {
		t.Errorf("other type: %q", got)
	}
}
