package server

import (
	"strings"
	"testing"
)

// TestACLDescribeCommands: rules and the description ACL GETUSER gives
// for them (redis-server 7.0.15's, for rules whose description does not
// depend on commands Turnstile lacks).
func TestACLDescribeCommands(t *testing.T) {
	s, _, _ := newTestServer(t)
	cases := []struct{ rules, want string }{
		{"", "-@all"},
		{"+@all", "+@all"},
		{"allcommands -@dangerous", "+@all -@dangerous"},
		{"+@read -get", "-@all +@read -get"},
		{"+select|0", "-@all +select|0"},
		{"+config|get", "-@all +config|get"},
		{"+@all -config|set", "+@all -config|set"},
		{"+@all -@all +cl.throttle", "-@all +cl.throttle"},
		{"+get -get", "-@all"},
		{"+select|0 +select", "-@all +select"},
		{"+config", "-@all +config"},
	}
	for _, tc := range cases {
		r := s.newRules()
		for _, op := range strings.Fields(tc.rules) {
			if err := s.applyRule(r, []byte(op)); err != nil {
				t.Fatalf("%q: %v", op, err)
			}
		}
		if got := s.describeCommands(r); got != tc.want {
			t.Errorf("%q described as %q, want %q", tc.rules, got, tc.want)
		}
		// The description rebuilds the same permissions.
		r2 := s.newRules()
		for _, op := range strings.Fields(s.describeCommands(r)) {
			s.applyRule(r2, []byte(op))
		}
		for i := range r.allowed {
			if r.allowed[i] != r2.allowed[i] {
				t.Errorf("%q: description does not rebuild the command bits", tc.rules)
				break
			}
		}
	}
}

// TestACLCheckRules: the permission check without a network.
func TestACLCheckRules(t *testing.T) {
	s, _, _ := newTestServer(t)
	r := s.newRules()
	for _, op := range []string{"on", "%R~r:*", "%W~w:*", "~rw:*", "&ch.*", "+get", "+set", "+incr", "+exists", "+select|1", "+publish", "+psubscribe"} {
		if err := s.applyRule(r, []byte(op)); err != nil {
			t.Fatal(op, err)
		}
	}
	cmd := func(args ...string) (*Command, [][]byte) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return s.table.Lookup(b[0]), b
	}
	cases := []struct {
		args   []string
		reason int
	}{
		{[]string{"get", "r:1"}, aclOK},
		{[]string{"get", "w:1"}, aclDeniedKey},
		{[]string{"get", "rw:1"}, aclOK},
		{[]string{"incr", "w:1"}, aclDeniedKey}, // INCR reads too: Redis's RW key spec
		{[]string{"incr", "rw:1"}, aclOK},
		{[]string{"exists", "w:1"}, aclOK}, // EXISTS touches no value: any matching pattern
		{[]string{"exists", "x"}, aclDeniedKey},
		{[]string{"set", "rw:1", "v"}, aclOK},
		{[]string{"set", "w:1", "v"}, aclOK}, // SET only writes, unless GET
		{[]string{"set", "w:1", "v", "get"}, aclDeniedKey},
		{[]string{"set", "w:1", "v", "GET\x00x"}, aclDeniedKey}, // Redis compares keywords as C strings
		{[]string{"set", "w:1", "v", "getx"}, aclOK},
		{[]string{"set", "r:1", "v"}, aclDeniedKey},
		{[]string{"del", "w:1"}, aclDeniedCmd},
		{[]string{"select", "1"}, aclOK},
		{[]string{"SELECT", "0"}, aclDeniedCmd},
		{[]string{"publish", "ch.x", "m"}, aclOK},
		{[]string{"publish", "other", "m"}, aclDeniedChannel},
		{[]string{"psubscribe", "ch.*"}, aclOK},
		{[]string{"psubscribe", "ch.x*"}, aclDeniedChannel},
		{[]string{"auth", "a", "b"}, aclOK}, // no_auth commands are always allowed
	}
	for _, tc := range cases {
		c, args := cmd(tc.args...)
		if got, _ := aclCheck(r, c, args); got != tc.reason {
			t.Errorf("%v: reason %d, want %d", tc.args, got, tc.reason)
		}
	}
}
