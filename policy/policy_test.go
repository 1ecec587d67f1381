package policy

import (
	"strings"
	"testing"
	"time"
)

func TestParsePeriod(t *testing.T) {
	good := map[string]time.Duration{
		"250ms": 250 * time.Millisecond, "1s": time.Second, "15m": 15 * time.Minute,
		"1h": time.Hour, "1d": 24 * time.Hour, "60": time.Minute, "1ms": time.Millisecond,
		"36500d": 36500 * 24 * time.Hour,
	}
	for in, want := range good {
		got, err := ParsePeriod(in)
		if err != nil || got != int64(want) {
			t.Errorf("ParsePeriod(%q) = %v, %v; want %v", in, time.Duration(got), err, want)
		}
		if back, err := ParsePeriod(FormatPeriod(got)); err != nil || back != got {
			t.Errorf("FormatPeriod(%v) = %q does not read back", want, FormatPeriod(got))
		}
	}
	for _, in := range []string{"", "s", "0s", "-1s", "+1s", "1.5s", "1x", "1 s", "1S", "36501d", "99999999999999999999d", "1us"} {
		if got, err := ParsePeriod(in); err == nil {
			t.Errorf("ParsePeriod(%q) = %v, want an error", in, time.Duration(got))
		}
	}
}

// TestParse reads the seed's example in both formats and checks every rule
// field.
func TestParse(t *testing.T) {
	const js = `{ "rules": [
		{ "id": "login-ip", "key": ["ip"], "algorithm": "sliding", "limit": 5, "per": "1m", "burst": 0, "shadow": false },
		{ "id": "api-user", "key": ["user"], "algorithm": "GCRA", "limit": 120, "per": "1m", "burst": 20 },
		{ "id": "otp-phone", "key": ["phone", "endpoint"], "algorithm": "log", "limit": 3, "per": "10m", "shadow": true }
	] }`
	const yml = `
rules:
  - id: login-ip
    key: [ip]
    algorithm: sliding
    limit: 5
    per: 1m
    burst: 0
    shadow: false
  - {id: api-user, key: [user], algorithm: GCRA, limit: 120, per: 1m, burst: 20}
  - id: otp-phone
    key: [phone, endpoint]
    algorithm: log
    limit: 3
    per: 10m
    shadow: true
`
	for name, data := range map[string]string{"p.json": js, "p.yaml": yml, "p.conf": js} {
		set, err := Parse(name, []byte(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(set.Rules) != 3 {
			t.Fatalf("%s: %d rules", name, len(set.Rules))
		}
		r, ok := set.Get("api-user")
		if !ok || r.Algorithm != GCRA || r.Limit != 120 || r.Period != int64(time.Minute) || r.Burst != 20 || r.Shadow {
			t.Fatalf("%s: api-user = %+v", name, r)
		}
		r, _ = set.Get("otp-phone")
		if r.Algorithm != Log || !r.Shadow || len(r.Key) != 2 || r.Period != int64(10*time.Minute) {
			t.Fatalf("%s: otp-phone = %+v", name, r)
		}
		if _, ok := set.Get("nope"); ok {
			t.Fatalf("%s: unknown id found", name)
		}
	}
	if set, err := Parse("empty.yaml", nil); err != nil || len(set.Rules) != 0 {
		t.Fatalf("empty file: %v, %v", set, err)
	}
}

// TestParseSeedExample reads the seed lesson's own policy example (§8)
// as it is written.
func TestParseSeedExample(t *testing.T) {
	const seed = `{ "rules": [
  { "id": "user-default", "key": ["user"],          "rate": 100, "per": "1m", "burst": 20 },
  { "id": "login",        "key": ["user", "ip"],    "rate": 10,  "per": "15m" },
  { "id": "otp-sms",      "key": ["phone"],         "rate": 3,   "per": "10m", "failMode": "closed" },
  { "id": "tenant",       "key": ["tenant"],        "rate": 500, "per": "1s",  "burst": 1000 }
] }`
	set, err := Parse("seed.json", []byte(seed))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{ID: "user-default", Key: []string{"user"}, Algorithm: GCRA, Limit: 100, Period: int64(time.Minute), Burst: 20, FailMode: "open"},
		{ID: "login", Key: []string{"user", "ip"}, Algorithm: GCRA, Limit: 10, Period: int64(15 * time.Minute), FailMode: "open"},
		{ID: "otp-sms", Key: []string{"phone"}, Algorithm: GCRA, Limit: 3, Period: int64(10 * time.Minute), FailMode: "closed"},
		{ID: "tenant", Key: []string{"tenant"}, Algorithm: GCRA, Limit: 500, Period: int64(time.Second), Burst: 1000, FailMode: "open"},
	}
	for i, w := range want {
		g := set.Rules[i]
		if g.ID != w.ID || strings.Join(g.Key, ",") != strings.Join(w.Key, ",") || g.Algorithm != w.Algorithm || g.Limit != w.Limit ||
			g.Period != w.Period || g.Burst != w.Burst || g.FailMode != w.FailMode || g.Shadow {
			t.Errorf("rule %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestParseErrors: every mistake names the file and the field.
func TestParseErrors(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"p.json", `{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5, "per": "1m", "limt": 3}]}`, `p.json: json: unknown field "limt"`},
		{"p.yaml", "rules:\n  - id: a\n    algorithm: fixed\n    limit: 5\n    per: 1m\n    limt: 3\n", `p.yaml: yaml: unmarshal errors:`},
		{"p.json", `{"rules": [{"algorithm": "fixed", "limit": 5, "per": "1m"}]}`, `p.json: rules[0].id: missing`},
		{"p.json", `{"rules": [{"id": "a b", "algorithm": "fixed", "limit": 5, "per": "1m"}]}`, `p.json: rules[0].id: "a b" must be`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5, "per": "1m"}, {"id": "a", "algorithm": "log", "limit": 5, "per": "1m"}]}`, `p.json: rules[1].id: "a" is already the id of rules[0]`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "token", "limit": 5, "per": "1m"}]}`, `p.json: rules[0].algorithm: "token" is not one of`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5, "rate": 5, "per": "1m"}]}`, `p.json: rules[0].rate: give limit or rate`},
		{"p.json", `{"rules": [{"id": "a", "rate": 5, "per": "1m", "failMode": "half"}]}`, `p.json: rules[0].failMode: "half" is not open or closed`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "fixed", "per": "1m"}]}`, `p.json: rules[0].limit: missing`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "fixed", "limit": 0, "per": "1m"}]}`, `p.json: rules[0].limit: limit must be a positive integer`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5}]}`, `p.json: rules[0].per: missing`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5, "per": "5x"}]}`, `p.json: rules[0].per: period "5x" is not`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "gcra", "limit": 5, "per": "1m", "burst": -1}]}`, `p.json: rules[0].burst: burst must be`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5, "per": "1m", "burst": 3}]}`, `p.json: rules[0].burst: only a gcra rule`},
		{"p.json", `{"rules": [{"id": "a", "algorithm": "log", "limit": 1000000, "per": "1m"}]}`, `p.json: rules[0].limit: a log rule keeps`},
		{"p.json", `{"rules": [{"id": "a", "key": ["ip", ""], "algorithm": "log", "limit": 1, "per": "1m"}]}`, `p.json: rules[0].key[1]: empty`},
		{"p.json", `{"rules": []} {}`, `p.json: more than one JSON value`},
		{"p.yaml", "rules: [", `p.yaml: yaml:`},
	}
	for _, tc := range cases {
		_, err := Parse(tc.name, []byte(tc.data))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want an error starting %q", tc.data, err, tc.want)
		}
	}
}

// FuzzParse: no input panics, every accepted set is consistent, and its
// encoding reads back as the same set (the form a changed set is kept in).
func FuzzParse(f *testing.F) {
	f.Add("p.json", []byte(`{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5, "per": "1m"}]}`))
	f.Add("p.yaml", []byte("rules:\n  - {id: b, algorithm: gcra, limit: 3, per: 250ms, burst: 9, shadow: true}\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		set, err := Parse(name, data)
		if err != nil {
			return
		}
		for i, r := range set.Rules {
			if got, ok := set.Get(r.ID); !ok || got.ID != r.ID {
				t.Fatalf("rule %d (%q) not found by id", i, r.ID)
			}
			if r.Limit < 1 || r.Period < int64(time.Millisecond) || r.Burst < 0 {
				t.Fatalf("invalid rule accepted: %+v", r)
			}
		}
		enc := set.Encode()
		back, err := Parse("set.json", enc)
		if err != nil {
			t.Fatalf("the encoding of an accepted set does not parse: %v\n%s", err, enc)
		}
		if !back.Equal(set) {
			t.Fatalf("round trip changed the set:\n%+v\n%+v", set.Rules, back.Rules)
		}
		if again := back.Encode(); string(again) != string(enc) {
			t.Fatalf("encoding not deterministic:\n%s\n%s", enc, again)
		}
	})
}

// TestEncodeRoundTrip: a set with every field set, and the empty set, read
// back as themselves; a changed field makes the sets unequal.
func TestEncodeRoundTrip(t *testing.T) {
	a, _ := NewRule("login-ip", "sliding", 5, "1m", 0, true, []string{"ip"})
	b, _ := NewRule("api", "gcra", 100, "250ms", 20, false, nil)
	c, _ := NewRule("day", "log", 1000, "1d", 0, false, []string{"user", "route"})
	for _, set := range []*Set{Empty(), Empty().With(a).With(b).With(c)} {
		back, err := Parse("x.json", set.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if !back.Equal(set) || len(back.Rules) != len(set.Rules) {
			t.Fatalf("round trip: %+v, want %+v", back.Rules, set.Rules)
		}
	}
	if got := string(Empty().Encode()); got != `{"rules":[]}` {
		t.Fatalf("empty set encodes as %s", got)
	}
	b2, _ := NewRule("api", "gcra", 100, "250ms", 21, false, nil)
	if Empty().With(a).With(b).Equal(Empty().With(a).With(b2)) {
		t.Fatal("sets with different bursts compare equal")
	}
}

// TestSetChanges: With replaces or appends, Without removes, and neither
// changes the set it starts from (readers of the old set are safe).
func TestSetChanges(t *testing.T) {
	a, err := NewRule("a", "fixed", 5, "1m", 0, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewRule("b", "gcra", 5, "1s", 2, true, []string{"ip"})
	s1 := Empty().With(a).With(b)
	a2, _ := NewRule("a", "log", 7, "1h", 0, false, nil)
	s2 := s1.With(a2)
	if r, _ := s1.Get("a"); r.Algorithm != Fixed {
		t.Fatalf("With changed the old set: %+v", r)
	}
	if r, _ := s2.Get("a"); r.Algorithm != Log || len(s2.Rules) != 2 || s2.Rules[0].ID != "a" {
		t.Fatalf("With did not replace in place: %+v", s2.Rules)
	}
	s3, found := s2.Without("a")
	if !found || len(s3.Rules) != 1 || s3.Rules[0].ID != "b" {
		t.Fatalf("Without: %v %+v", found, s3.Rules)
	}
	if _, ok := s3.Get("b"); !ok {
		t.Fatal("b lost its index")
	}
	if _, found := s3.Without("zzz"); found {
		t.Fatal("Without found a missing rule")
	}
	if _, err := NewRule("bad id", "fixed", 5, "1m", 0, false, nil); err == nil || !strings.HasPrefix(err.Error(), "rule.id: ") {
		t.Fatalf("NewRule error: %v", err)
	}
}

// TestParsePeriodBytesDoesNotAllocate: RL.LIMIT parses a period on every
// call.
func TestParsePeriodBytesDoesNotAllocate(t *testing.T) {
	b := []byte("250ms")
	if n := testing.AllocsPerRun(100, func() {
		if _, err := ParsePeriodBytes(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
