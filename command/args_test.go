package command

import (
	"strings"
	"testing"
)

// describeArgs prints an argument tree compactly.
func describeArgs(args []Arg) string {
	var parts []string
	for _, a := range args {
		s := a.Name + ":" + a.Type
		if a.Token != "" {
			s += "/" + a.Token
		}
		if a.Optional {
			s += "?"
		}
		if a.Multiple {
			s += "*"
		}
		if a.Since != "" {
			s += "@" + a.Since
		}
		if len(a.Args) > 0 {
			s += "{" + describeArgs(a.Args) + "}"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestParseArgs(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"key:key", "key:key"},
		{"key:key value:string condition=[NX|XX]@2.6.12 [GET]@6.2.0 expiration=[EX seconds:integer@2.6.12|PX milliseconds:integer|KEEPTTL@6.0.0]",
			"key:key value:string condition:oneof?@2.6.12{nx:pure-token/NX xx:pure-token/XX} get:pure-token/GET?@6.2.0 " +
				"expiration:oneof?{seconds:integer/EX@2.6.12 milliseconds:integer/PX keepttl:pure-token/KEEPTTL@6.0.0}"},
		{"key:key [change=CH]@3.0.2 score_member=(score:double member:string)...",
			"key:key change:pure-token/CH?@3.0.2 score_member:block*{score:double member:string}"},
		{"key:key [LIMIT offset:integer count:integer] [COUNT count:integer] [WEIGHTS weight:integer...]",
			"key:key limit:block/LIMIT?{offset:integer count:integer} count:integer/COUNT? weight:integer/WEIGHTS?*"},
		{"key:key... timeout:double", "key:key* timeout:double"},
	}
	for _, c := range cases {
		args, err := ParseArgs(c.spec)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if got := describeArgs(args); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.spec, got, c.want)
		}
	}
	for _, bad := range []string{"[", "key:nosuch", "lower", "[a:string", "()", "x=", "a:string ]"} {
		if _, err := ParseArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
