package server

// Keyword arguments are compared as Redis compares them: as C strings
// (strcasecmp, strtoull), so an argument ends at its first NUL byte, and
// "nx\x00abc" is the option NX. Error texts that quote an argument quote
// it up to that NUL too (Redis formats them with %s). Keys, values,
// patterns and numbers other than cursors stay binary-safe.

// cstr returns b up to its first NUL byte: the part of an argument
// Redis's C string functions see.
func cstr(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// cstring is cstr as a string, for error texts quoting an argument.
func cstring(b []byte) string { return string(cstr(b)) }

// isKeyword reports whether arg names the lower-case ASCII word kw,
// ignoring ASCII case and anything from a NUL byte on (strcasecmp).
func isKeyword(arg []byte, kw string) bool {
	if len(arg) < len(kw) || len(arg) > len(kw) && arg[len(kw)] != 0 {
		return false
	}
	for i := 0; i < len(kw); i++ { // kw has no NUL, so neither has this prefix
		if lower(arg[i]) != kw[i] {
			return false
		}
	}
	return true
}

// optIs is isKeyword (SET's and GETEX's name for it).
func optIs(arg []byte, kw string) bool { return isKeyword(arg, kw) }

// keyword returns arg lower-cased up to its first NUL byte, for a switch
// over the keywords an argument may be.
func keyword(arg []byte) string {
	arg = cstr(arg)
	b := make([]byte, len(arg))
	for i, c := range arg {
		b[i] = lower(c)
	}
	return string(b)
}
