package server

// globMatch reports whether s (a string or []byte, so map keys need no
// conversion) matches the Redis glob pattern p (as in KEYS,
// SCAN MATCH and CONFIG GET): '*' any sequence, '?' any byte, '[abc]',
// '[^abc]', '[a-z]' classes, and '\' escaping the next byte. It runs in
// O(len(p)*len(s)) time with no recursion, so a hostile pattern cannot blow
// up: on a mismatch it only returns to the most recent '*'.
//
// Redis's corner cases are kept:
//   - the empty string matches only the empty pattern (not even "*": KEYS
//     and SCAN treat a pattern of exactly "*" as "no filter" instead);
//   - an unterminated class ("[abc") runs to the end of the pattern;
//   - a lone '\' at the end of the pattern, or of a class, is literal;
//   - in a class, an escaped byte is compared case-sensitively even when
//     nocase is set, and a range "[x-y]" may be reversed ("[z-a]");
//   - range bounds compare as signed chars, as Redis does on x86, so a range
//     with a bound >= 0x80 covers a different set of bytes than one might
//     expect ("[a-\xff]" is 0x00..'a' plus 0xff).
func globMatch[S ~string | ~[]byte](p []byte, s S, nocase bool) bool {
	if len(s) == 0 {
		return len(p) == 0
	}
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) && p[pi] == '*' {
			for pi < len(p) && p[pi] == '*' {
				pi++
			}
			if pi == len(p) {
				return true
			}
			starP, starS = pi, si
			continue
		}
		if pi < len(p) {
			if n, ok := matchOne(p[pi:], s[si], nocase); ok {
				pi += n
				si++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchOne matches one pattern element at the start of p (not empty, not
// '*') against c and returns the element's length in p.
func matchOne(p []byte, c byte, nocase bool) (int, bool) {
	switch p[0] {
	case '?':
		return 1, true
	case '[':
		return matchClass(p, c, nocase)
	case '\\':
		if len(p) >= 2 {
			return 2, eqByte(p[1], c, nocase)
		}
	}
	return 1, eqByte(p[0], c, nocase)
}

// matchClass matches a "[...]" element. An unterminated class extends to the
// end of the pattern, as in Redis.
func matchClass(p []byte, c byte, nocase bool) (int, bool) {
	i := 1
	neg := false
	if i < len(p) && p[i] == '^' {
		neg = true
		i++
	}
	match := false
	for i < len(p) && p[i] != ']' {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			if p[i] == c { // case-sensitive even with nocase, as Redis
				match = true
			}
		case i+2 < len(p) && p[i+1] == '-':
			// Signed comparison: Redis compares C chars, signed on x86.
			lo, hi, cc := int8(p[i]), int8(p[i+2]), int8(c)
			if lo > hi {
				lo, hi = hi, lo
			}
			if nocase {
				lo, hi, cc = int8(lower(byte(lo))), int8(lower(byte(hi))), int8(lower(c))
			}
			if cc >= lo && cc <= hi {
				match = true
			}
			i += 2
		default:
			if eqByte(p[i], c, nocase) {
				match = true
			}
		}
		i++
	}
	if i < len(p) {
		i++ // the closing ']'
	}
	return i, match != neg
}

func eqByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(a) == lower(b)
	}
	return a == b
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
