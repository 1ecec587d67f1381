package command

import (
	"fmt"
	"strings"
)

// Arg is one argument of a command as COMMAND DOCS reports it (Redis 7's
// argument tree): a typed value, a pure token, or a oneof or block of
// arguments.
type Arg struct {
	Name     string
	Type     string // string, integer, double, key, pattern, unix-time, pure-token, oneof, block
	Token    string // the keyword before the value ("EX" of "EX seconds"), or the pure token
	Since    string
	Optional bool
	Multiple bool
	Args     []Arg // oneof and block
}

// argTypes are the value types a spec may name.
var argTypes = map[string]bool{"string": true, "integer": true, "double": true, "key": true,
	"pattern": true, "unix-time": true}

// ParseArgs reads a command's compact argument spec, the Docs field of a
// row. The spec lists items separated by spaces:
//
//	name:type          a value (types above): "key:key", "seconds:integer"
//	TOKEN              a pure token (upper case): "NX"; name=TOKEN names it
//	TOKEN name:type    in a group, a value after its keyword: "[COUNT n:integer]"
//	[ ... ]            optional; ( ... ) required grouping
//	a|b|c              inside a group: one of the alternatives (oneof)
//	x y                inside a group, several items: a block; a block
//	                   starting with TOKEN takes it as its token
//	name=[ ... ]       names a group (default: its first item's name)
//	...                after an item or group: it repeats (multiple)
//	@7.0.0             after an item or group: the version that added it
//
// For example SET's is
//
//	key:key value:string condition=[NX|XX]@2.6.12 [GET]@6.2.0
//	expiration=[EX seconds:integer|PX milliseconds:integer|...|KEEPTTL]
func ParseArgs(spec string) ([]Arg, error) {
	p := &argParser{toks: tokenizeArgs(spec)}
	args, err := p.seq("")
	if err != nil {
		return nil, fmt.Errorf("argument spec %q: %w", spec, err)
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("argument spec %q: unexpected %q", spec, p.toks[p.i])
	}
	return args, nil
}

// tokenizeArgs splits a spec into words and the characters [ ] ( ) |.
func tokenizeArgs(spec string) []string {
	var out []string
	cur := ""
	flush := func() {
		if cur != "" {
			out = append(out, cur)
			cur = ""
		}
	}
	for _, c := range spec {
		switch c {
		case ' ', '\t', '\n':
			flush()
		case '[', ']', '(', ')', '|':
			if c == '[' || c == '(' {
				if strings.HasSuffix(cur, "=") { // name=[ keeps its name
					out = append(out, cur)
					cur = ""
					out = append(out, string(c))
					continue
				}
			}
			flush()
			out = append(out, string(c))
		default:
			cur += string(c)
		}
	}
	flush()
	return out
}

type argParser struct {
	toks []string
	i    int
}

func (p *argParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

// seq parses items until end, a '|' or the closing bracket.
func (p *argParser) seq(closer string) ([]Arg, error) {
	var out []Arg
	for p.i < len(p.toks) {
		t := p.peek()
		if t == "|" || t == closer || t == "]" || t == ")" {
			break
		}
		a, err := p.item()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// item parses one word or group with its suffixes.
func (p *argParser) item() (Arg, error) {
	t := p.toks[p.i]
	p.i++
	name := ""
	if strings.HasSuffix(t, "=") {
		name = strings.TrimSuffix(t, "=")
		if p.i >= len(p.toks) {
			return Arg{}, fmt.Errorf("nothing after %q", t)
		}
		t = p.toks[p.i]
		p.i++
	}
	var a Arg
	switch t {
	case "[", "(":
		closer := map[string]string{"[": "]", "(": ")"}[t]
		var alts [][]Arg
		for {
			s, err := p.seq(closer)
			if err != nil {
				return Arg{}, err
			}
			if len(s) == 0 {
				return Arg{}, fmt.Errorf("empty alternative")
			}
			alts = append(alts, s)
			if p.peek() == "|" {
				p.i++
				continue
			}
			break
		}
		if p.peek() != closer {
			return Arg{}, fmt.Errorf("missing %q", closer)
		}
		p.i++
		if len(alts) == 1 {
			a = block(alts[0])
		} else {
			a = Arg{Type: "oneof", Name: alts[0][0].Name}
			for _, s := range alts {
				a.Args = append(a.Args, block(s))
			}
		}
		a.Optional = t == "["
	default:
		if n, rest, ok := strings.Cut(t, "="); ok && rest != "" { // name=TOKEN
			name, t = n, rest
		}
		if n, typ, ok := strings.Cut(t, ":"); ok {
			typ, suffix := splitSuffix(typ)
			if !argTypes[typ] {
				return Arg{}, fmt.Errorf("unknown type %q", typ)
			}
			a = Arg{Name: n, Type: typ}
			p.applySuffix(&a, suffix)
		} else {
			tok, suffix := splitSuffix(t)
			if tok == "" || strings.ToUpper(tok) != tok {
				return Arg{}, fmt.Errorf("%q is neither name:type nor a TOKEN", t)
			}
			a = Arg{Name: strings.ToLower(tok), Type: "pure-token", Token: tok}
			p.applySuffix(&a, suffix)
		}
		if name != "" {
			a.Name = name
		}
		return a, nil
	}
	if name != "" {
		a.Name = name
	}
	// Suffixes of a group come as the next word ("...", "@1.0", "...@1.0").
	if s := p.peek(); strings.HasPrefix(s, "...") || strings.HasPrefix(s, "@") {
		p.i++
		p.applySuffix(&a, s)
	}
	return a, nil
}

// block makes one argument of a group's sequence: the item itself; a
// value with the keyword before it ("EX seconds"); or a block, whose
// token is a leading keyword ("LIMIT offset count").
func block(s []Arg) Arg {
	if len(s) == 1 {
		return s[0]
	}
	lead := s[0].Type == "pure-token" && !s[0].Optional && !s[0].Multiple
	if lead && len(s) == 2 && s[1].Token == "" && s[1].Type != "pure-token" && s[1].Type != "oneof" && s[1].Type != "block" {
		v := s[1]
		v.Token = s[0].Token
		return v
	}
	b := Arg{Type: "block", Name: s[0].Name, Args: s}
	if lead {
		b.Token, b.Args = s[0].Token, s[1:]
	}
	return b
}

// splitSuffix splits "name...@1.0" into the word and its suffix.
func splitSuffix(w string) (string, string) {
	if i := strings.IndexAny(w, ".@"); i > 0 && (strings.HasPrefix(w[i:], "...") || w[i] == '@') {
		return w[:i], w[i:]
	}
	return w, ""
}

func (p *argParser) applySuffix(a *Arg, s string) {
	if rest, ok := strings.CutPrefix(s, "..."); ok {
		a.Multiple = true
		s = rest
	}
	if v, ok := strings.CutPrefix(s, "@"); ok {
		a.Since = v
	}
}
