package server

import (
	"bufio"
	"fmt"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/clock"
)

// docShape prints a COMMAND DOCS reply with the prose left out (summary
// and complexity texts, the history list), which Turnstile words as Redis
// 7.2 does or leaves out: what remains is the structure redis-cli reads.
func docShape(t tree) string {
	var b strings.Builder
	var walk func(t tree)
	walk = func(t tree) {
		fmt.Fprintf(&b, "%c", t.kind)
		if len(t.kids) == 0 {
			fmt.Fprintf(&b, "%q", t.s)
			return
		}
		b.WriteString("[")
		for i := 0; i < len(t.kids); i++ {
			k := t.kids[i]
			if i%2 == 0 && i+1 < len(t.kids) && k.kind == '$' {
				switch k.s {
				case "history":
					i++
					continue
				case "summary", "complexity":
					b.WriteString(`$"` + k.s + `"$"…" `)
					i++
					continue
				}
			}
			walk(k)
			b.WriteString(" ")
		}
		b.WriteString("]")
	}
	walk(t)
	// An aggregate's count differs where history was left out.
	return strings.NewReplacer("*12[", "*[", "*10[", "*[", "%6[", "%[", "%5[", "%[").Replace(b.String())
}

// TestCommandDocsShapeAsRedis: COMMAND DOCS for GET, SET and ZADD has
// Redis 7.0.15's structure, argument tree included, in RESP2 and RESP3.
func TestCommandDocsShapeAsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	_, addr, _ := newTestServer(t, func(c *Config) { c.Clock = clock.NewMonotonic() })
	for _, proto := range []string{"2", "3"} {
		for _, cmd := range []string{"get", "set", "zadd"} {
			var shapes [2]string
			for i, a := range []string{redisAddr, addr} {
				r := dialRaw(t, a)
				r.do("HELLO", proto)
				r.send(encodeCommand("COMMAND", "DOCS", cmd))
				tr, err := parseTree(bufio.NewReader(strings.NewReader(r.readReply())))
				if err != nil {
					t.Fatal(err)
				}
				shapes[i] = docShape(tr)
			}
			if shapes[0] != shapes[1] {
				t.Errorf("RESP%s COMMAND DOCS %s:\n redis:     %s\n turnstile: %s", proto, cmd, shapes[0], shapes[1])
			}
		}
	}
}
