package server

import (
	"bytes"
	"strings"
	"testing"
)

// Expected values were checked against redis-server 7.0.15 (KEYS).
var globCases = []struct {
	pat, s string
	want   bool
}{
	// literals and empty strings
	{"", "", true},
	{"", "a", false},
	{"a", "", false},
	{"abc", "abc", true},
	{"abc", "abd", false},
	{"abc", "ab", false},
	{"ab", "abc", false},
	// '*' and '?'
	{"*", "", false}, // KEYS/SCAN special-case a pattern of exactly "*"
	{"**", "", false},
	{"*", "anything", true},
	{"***", "x", true},
	{"a*", "a", true},
	{"a*", "abc", true},
	{"a*", "ba", false},
	{"*a", "bba", true},
	{"*a", "ab", false},
	{"a*b*c", "axxbyyc", true},
	{"a*b*c", "axxbyy", false},
	{"a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	{"?", "", false},
	{"?", "a", true},
	{"?", "ab", false},
	{"??*", "ab", true},
	{"h?llo", "hello", true},
	{"h?llo", "hllo", false},
	{"a?*", "a", false},
	// classes
	{"h[ae]llo", "hello", true},
	{"h[ae]llo", "hallo", true},
	{"h[ae]llo", "hillo", false},
	{"h[^e]llo", "hallo", true},
	{"h[^e]llo", "hello", false},
	{"h[a-b]llo", "hbllo", true},
	{"h[a-b]llo", "hcllo", false},
	{"[b-a]", "a", true}, // reversed range
	{"[z-a]", "m", true},
	{"[a-z]", "A", false},
	{"[]", "]", false}, // empty class matches nothing
	{"[]a]", "a]", false},
	{"[]a]", "]", false},
	{"[^]", "x", true},
	{"[^]", "", false},
	{"[", "[", false}, // lone '[' is an empty unterminated class
	{"[^", "x", true}, // unterminated negated empty class: any byte
	{"[abc", "b", true},
	{"[abc", "bc", false},
	{"[abc", "[abc", false},
	{"a[b", "ab", true},
	{"[a-", "-", true}, // too short for a range: 'a' and '-'
	{"[a-", "b", false},
	{"[a-]", "^", true}, // range a..']' reversed to ]..a, unterminated
	{"[a-]", "]", true},
	{"[a-]b", "b", true},
	{"[--0]", "/", true},
	{"[\\]]", "]", true},
	{"[\\]]", "\\", false},
	{"[\\", "\\", true}, // lone backslash at the end of a class is literal
	{"[\\-x]", "-", true},
	{"[\\-x]", "a", false},
	{"[a\\-z]", "m", false},
	{"[^a-c]", "d", true},
	{"[^a-c]", "b", false},
	{"*[abc", "xxb", true},
	{"*[abc", "xxbc", true},
	{"*[abc", "xxd", false},
	// signed-char ranges (Redis on x86)
	{"[a-\xff]", "\xff", true},
	{"[a-\xff]", "\x00", true},
	{"[a-\xff]", "b", false},
	{"[a-\xff]", "\x80", false},
	{"[\x80-\xff]", "\x90", true},
	{"[\x80-\xff]", "a", false},
	// escapes
	{"\\*", "*", true},
	{"\\*", "a", false},
	{"\\?", "?", true},
	{"\\[a]", "[a]", true},
	{"\\", "\\", true}, // trailing backslash is literal
	{"a\\", "a\\", true},
	{"\\\\", "\\", true},
	{"\\a", "a", true},
	{"*\\*", "ab*", true},
	{"*\\*", "ab", false},
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range globCases {
		if got := globMatch([]byte(tc.pat), []byte(tc.s), false); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
		if strings.Count(tc.pat, "*") <= 4 {
			if ref := globRef([]byte(tc.pat), []byte(tc.s), false); ref != tc.want {
				t.Errorf("globRef(%q, %q) = %v, want %v", tc.pat, tc.s, ref, tc.want)
			}
		}
	}
}

func TestGlobMatchNocase(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"HELLO", "hello", true},
		{"h*O", "hello", true},
		{"[A-C]", "b", true},
		{"[a-c]", "B", true},
		{"[^A-C]", "b", false},
		{"\\H", "h", true},    // escape outside a class honours nocase
		{"[\\H]", "h", false}, // ... inside a class it does not (Redis)
		{"[\\H]", "H", true},
		{"[Z-a]", "m", false}, // bounds lowered after ordering: z..a is empty
		{"MAXMEMORY*", "maxmemory-policy", true},
	}
	for _, tc := range cases {
		if got := globMatch([]byte(tc.pat), []byte(tc.s), true); got != tc.want {
			t.Errorf("globMatch(%q, %q, nocase) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
		if ref := globRef([]byte(tc.pat), []byte(tc.s), true); ref != tc.want {
			t.Errorf("globRef(%q, %q, nocase) = %v, want %v", tc.pat, tc.s, ref, tc.want)
		}
	}
}

// globRef is a deliberately naive recursive matcher with the same
// semantics, used to cross-check globMatch's backtracking in the fuzzer.
// It is exponential, so callers keep inputs short.
func globRef(p, s []byte, nocase bool) bool {
	if len(s) == 0 {
		return len(p) == 0
	}
	return globRefRest(p, s, nocase)
}

// globRefRest matches a non-empty s (or an s that became empty by consuming
// bytes, where only trailing stars may remain).
func globRefRest(p, s []byte, nocase bool) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	if p[0] == '*' {
		for i := 0; i <= len(s); i++ {
			if globRefRest(p[1:], s[i:], nocase) {
				return true
			}
		}
		return false
	}
	if len(s) == 0 {
		return false
	}
	n, ok := refOne(p, s[0], nocase)
	return ok && globRefRest(p[n:], s[1:], nocase)
}

// refOne is an independent reading of one pattern element.
func refOne(p []byte, c byte, nocase bool) (int, bool) {
	fold := func(b byte) byte {
		if nocase && b >= 'A' && b <= 'Z' {
			return b + 32
		}
		return b
	}
	switch {
	case p[0] == '?':
		return 1, true
	case p[0] == '\\' && len(p) > 1:
		return 2, fold(p[1]) == fold(c)
	case p[0] != '[':
		return 1, fold(p[0]) == fold(c)
	}
	j, neg, hit := 1, false, false
	if j < len(p) && p[j] == '^' {
		neg, j = true, j+1
	}
	for ; j < len(p); j++ {
		if p[j] == ']' {
			return j + 1, hit != neg
		}
		if p[j] == '\\' && j+1 < len(p) {
			j++
			hit = hit || p[j] == c
			continue
		}
		if j+2 < len(p) && p[j+1] == '-' {
			a, b := int(int8(p[j])), int(int8(p[j+2]))
			a, b = min(a, b), max(a, b)
			x := int(int8(c))
			if nocase {
				a, b, x = int(int8(fold(byte(a)))), int(int8(fold(byte(b)))), int(int8(fold(c)))
			}
			hit = hit || (x >= a && x <= b)
			j += 2
			continue
		}
		hit = hit || fold(p[j]) == fold(c)
	}
	return len(p), hit != neg
}

func FuzzGlobMatch(f *testing.F) {
	for _, tc := range globCases {
		f.Add([]byte(tc.pat), []byte(tc.s), false)
	}
	f.Add([]byte("*[a-z]?\\x"), []byte("Hello"), true)
	f.Fuzz(func(t *testing.T, p, s []byte, nocase bool) {
		got := globMatch(p, s, nocase) // must not panic or hang

		// A pattern without special characters matches only itself.
		if !bytes.ContainsAny(p, "*?[\\") && !nocase {
			if got != bytes.Equal(p, s) {
				t.Fatalf("literal pattern %q vs %q: got %v", p, s, got)
			}
		}
		// '*' matches every non-empty string (the empty key is matched by
		// KEYS/SCAN's special case for a pattern of exactly "*").
		if len(s) > 0 && !globMatch([]byte("*"), s, nocase) {
			t.Fatalf("'*' does not match %q", s)
		}
		// Escaping every byte of s gives a pattern matching exactly s.
		if len(s) > 0 {
			esc := make([]byte, 0, 2*len(s))
			for _, c := range s {
				esc = append(esc, '\\', c)
			}
			if !globMatch(esc, s, false) {
				t.Fatalf("escaped %q does not match itself", s)
			}
		}
		// Agrees with the naive recursive reference on short inputs.
		if len(p) <= 12 && len(s) <= 12 && bytes.Count(p, []byte("*")) <= 4 {
			if ref := globRef(p, s, nocase); ref != got {
				t.Fatalf("globMatch(%q, %q, %v) = %v, reference %v", p, s, nocase, got, ref)
			}
		}
	})
}
