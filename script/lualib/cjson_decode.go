package lualib

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// jsonTokenType names follow lua-cjson's, which appear in its error texts
// ("Expected value but found T_END at character 1").
type jsonTokenType int

const (
	tObjBegin jsonTokenType = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tError
)

var jsonTokenNames = [...]string{
	tObjBegin: "T_OBJ_BEGIN",
	tObjEnd:   "T_OBJ_END",
	tArrBegin: "T_ARR_BEGIN",
	tArrEnd:   "T_ARR_END",
	tString:   "T_STRING",
	tNumber:   "T_NUMBER",
	tBoolean:  "T_BOOLEAN",
	tNull:     "T_NULL",
	tColon:    "T_COLON",
	tComma:    "T_COMMA",
	tEnd:      "T_END",
	tError:    "T_ERROR",
}

type jsonToken struct {
	typ   jsonTokenType
	index int    // byte offset of the token (of the error for tError)
	str   string // tString's value, tError's description
	num   float64
	bool  bool
}

// jsonDecoder reads lua-cjson's JSON. data is the input up to its first NUL
// byte: lua-cjson reads a C string, so a NUL ends the text (at() gives 0
// past the end, which is the end token). slots counts the Lua stack slots
// lua-cjson would use (the argument, one per open array, two per open
// object) to fail at the C stack limit as it does.
type jsonDecoder struct {
	L     *lua.LState
	cfg   *cjsonConfig
	data  string
	pos   int
	depth int
	slots int
}

func (d *jsonDecoder) at(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0
}

// cjsonDecode is cjson.decode(text).
func cjsonDecode(L *lua.LState) int {
	if L.GetTop() != 1 {
		argError(L, 1, "expected 1 argument")
	}
	cfg := cjsonConf(L)
	s := checkString(L, 1)
	if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
		raise(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	d := &jsonDecoder{L: L, cfg: cfg, data: s, slots: 1}
	tok := d.next()
	v := d.value(&tok)
	if tok = d.next(); tok.typ != tEnd {
		d.parseError("the end", &tok)
	}
	L.Push(v)
	return 1
}

func (d *jsonDecoder) parseError(expected string, tok *jsonToken) {
	found := jsonTokenNames[tok.typ]
	if tok.typ == tError {
		found = tok.str
	}
	raise(d.L, "Expected "+expected+" but found "+found+" at character "+strconv.Itoa(tok.index+1))
}

// descend enters an array or object that needs the given stack slots.
func (d *jsonDecoder) descend(slots int) {
	d.depth++
	if int64(d.depth) > int64(d.cfg.decodeMaxDepth) || d.slots+slots > luaMaxCStack {
		raise(d.L, "Found too many nested data structures ("+strconv.Itoa(d.depth)+
			") at character "+strconv.Itoa(d.pos))
	}
}

func (d *jsonDecoder) value(tok *jsonToken) lua.LValue {
	switch tok.typ {
	case tString:
		return lua.LString(tok.str)
	case tNumber:
		return lua.LNumber(tok.num)
	case tBoolean:
		return lua.LBool(tok.bool)
	case tNull:
		return d.cfg.null
	case tObjBegin:
		return d.object()
	case tArrBegin:
		return d.array()
	}
	d.parseError("value", tok)
	return nil
}

func (d *jsonDecoder) object() lua.LValue {
	d.descend(3)
	d.slots += 2 // the table and a key
	t := d.L.NewTable()
	tok := d.next()
	if tok.typ != tObjEnd {
		for {
			if tok.typ != tString {
				d.parseError("object key string", &tok)
			}
			key := tok.str
			if tok = d.next(); tok.typ != tColon {
				d.parseError("colon", &tok)
			}
			tok = d.next()
			t.RawSetString(key, d.value(&tok))
			tok = d.next()
			if tok.typ == tObjEnd {
				break
			}
			if tok.typ != tComma {
				d.parseError("comma or object end", &tok)
			}
			tok = d.next()
		}
	}
	d.slots -= 2
	d.depth--
	return t
}

func (d *jsonDecoder) array() lua.LValue {
	d.descend(2)
	d.slots++ // the table
	t := d.L.NewTable()
	tok := d.next()
	if tok.typ != tArrEnd {
		for i := 1; ; i++ {
			t.RawSetInt(i, d.value(&tok))
			tok = d.next()
			if tok.typ == tArrEnd {
				break
			}
			if tok.typ != tComma {
				d.parseError("comma or array end", &tok)
			}
			tok = d.next()
		}
	}
	d.slots--
	d.depth--
	return t
}

// next reads the next token, skipping white space (space, tab, CR, LF).
func (d *jsonDecoder) next() jsonToken {
	for {
		c := d.at(d.pos)
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		d.pos++
	}
	tok := jsonToken{index: d.pos}
	c := d.at(d.pos)
	if t := jsonSingleTokens[c]; t != 0 {
		d.pos++
		tok.typ = t - 1
		return tok
	}
	rest := d.data[d.pos:]
	switch {
	case c == 0:
		tok.typ = tEnd
	case c == '"':
		d.stringToken(&tok)
	case c == '-' || isDigit(c):
		if !d.cfg.decodeInvalid && d.invalidNumber() {
			d.tokenError(&tok, "invalid number")
		} else {
			d.numberToken(&tok)
		}
	case strings.HasPrefix(rest, "true"):
		tok.typ, tok.bool = tBoolean, true
		d.pos += 4
	case strings.HasPrefix(rest, "false"):
		tok.typ = tBoolean
		d.pos += 5
	case strings.HasPrefix(rest, "null"):
		tok.typ = tNull
		d.pos += 4
	case (c == '+' || c|0x20 == 'i' || c|0x20 == 'n') && d.cfg.decodeInvalid && d.invalidNumber():
		// With invalid numbers allowed, only what strict JSON rejects is
		// read as a number here (+1, inf, nan); other junk starting with
		// these letters stays an invalid token.
		d.numberToken(&tok)
	default:
		d.tokenError(&tok, "invalid token")
	}
	return tok
}

func (d *jsonDecoder) tokenError(tok *jsonToken, what string) {
	tok.typ = tError
	tok.index = d.pos
	tok.str = what
}

// invalidNumber reports a number that strict JSON rejects but strtod reads:
// a leading "+", a hexadecimal "0x", a leading zero, inf or nan.
func (d *jsonDecoder) invalidNumber() bool {
	p := d.pos
	if d.at(p) == '+' {
		return true
	}
	if d.at(p) == '-' {
		p++
	}
	c := d.at(p)
	if c == '0' {
		c2 := d.at(p + 1)
		return c2|0x20 == 'x' || isDigit(c2)
	}
	if c <= '9' {
		return false
	}
	rest := d.data[min(p, len(d.data)):]
	return hasPrefixFold(rest, "inf") || hasPrefixFold(rest, "nan")
}

func (d *jsonDecoder) numberToken(tok *jsonToken) {
	v, n := strtod(d.data[d.pos:])
	if n == 0 {
		d.tokenError(tok, "invalid number")
		return
	}
	tok.typ, tok.num = tNumber, v
	d.pos += n
}

// stringToken reads a string; d.pos is at its opening quote.
func (d *jsonDecoder) stringToken(tok *jsonToken) {
	d.pos++
	var b strings.Builder
	for {
		c := d.at(d.pos)
		if c == '"' {
			break
		}
		if c == 0 {
			d.tokenError(tok, "unexpected end of string")
			return
		}
		if c == '\\' {
			esc := d.at(d.pos + 1)
			if esc == 'u' {
				if !d.unicodeEscape(&b) {
					d.tokenError(tok, "invalid unicode escape code")
					return
				}
				continue
			}
			c = jsonEscapes[esc]
			if c == 0 {
				d.tokenError(tok, "invalid escape code")
				return
			}
			d.pos++
		}
		b.WriteByte(c)
		d.pos++
	}
	d.pos++
	tok.typ, tok.str = tString, b.String()
}

// jsonSingleTokens maps the one-byte tokens to their type plus one (0: not
// a one-byte token).
var jsonSingleTokens = [256]jsonTokenType{
	'{': tObjBegin + 1, '}': tObjEnd + 1, '[': tArrBegin + 1, ']': tArrEnd + 1, ',': tComma + 1, ':': tColon + 1,
}

var jsonEscapes = [256]byte{
	'"': '"', '\\': '\\', '/': '/', 'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r',
}

// hex4 reads four hex digits at i, -1 when they are not all there.
func (d *jsonDecoder) hex4(i int) int {
	v := 0
	for j := i; j < i+4; j++ {
		c := d.at(j)
		var digit int
		switch {
		case isDigit(c):
			digit = int(c - '0')
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			digit = int(c|0x20-'a') + 10
		default:
			return -1
		}
		v = v<<4 | digit
	}
	return v
}

// unicodeEscape appends the UTF-8 of the \uXXXX escape at d.pos (a high
// surrogate must be followed by a \u low surrogate) and moves past it.
func (d *jsonDecoder) unicodeEscape(b *strings.Builder) bool {
	cp := d.hex4(d.pos + 2)
	if cp < 0 {
		return false
	}
	length := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 {
			return false // a low surrogate first
		}
		if d.at(d.pos+6) != '\\' || d.at(d.pos+7) != 'u' {
			return false
		}
		low := d.hex4(d.pos + 8)
		if low < 0 || low&0xFC00 != 0xDC00 {
			return false
		}
		cp = (cp&0x3FF)<<10 | low&0x3FF + 0x10000
		length = 12
	}
	b.WriteRune(rune(cp)) // never a surrogate: those were combined above
	d.pos += length
	return true
}
