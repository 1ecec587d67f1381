package server

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSplitConfigLine: words split as Redis's sdssplitargs splits them
// (the cases were checked against redis-server 7.0's config file reader).
func TestSplitConfigLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string // nil with bad: an error
		bad  bool
	}{
		{line: "port 6379", want: []string{"port", "6379"}},
		{line: "  save   60\t1  ", want: []string{"save", "60", "1"}},
		{line: `save ""`, want: []string{"save", ""}},
		{line: `requirepass "a b\"c\\d\n\x41\x4g"`, want: []string{"requirepass", "a b\"c\\d\nAx4g"}},
		{line: `requirepass 'it\'s "x" \n'`, want: []string{"requirepass", `it's "x" \n`}},
		{line: `dir foo"bar baz"`, want: []string{"dir", "foobar baz"}},
		{line: `logfile ''`, want: []string{"logfile", ""}},
		{line: `port "1"x`, bad: true},
		{line: `port '1'x`, bad: true},
		{line: `port "1`, bad: true},
		{line: `port '1`, bad: true},
		{line: `port "abc\`, bad: true},
		{line: "", want: nil},
	} {
		got, err := SplitConfigLine(tc.line)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: got %q, want an error", tc.line, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func writeConf(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func loadConf(t *testing.T, path string) (Config, []IgnoredDirective, error) {
	t.Helper()
	c := DefaultConfig()
	c.Persist.Save = DefaultSaveRules
	dirs, err := ReadConfigFile(path)
	if err != nil {
		return c, nil, err
	}
	ign, err := ApplyConfig(dirs, &c, nil)
	return c, ign, err
}

// TestApplyConfig: save lines accumulate (the first replaces the
// defaults; save "" clears), bind takes several words, the last line of
// other directives wins, ignored directives are reported once each.
func TestApplyConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, conf string
		save       string
		bind       string
		ignored    []string
	}{
		{name: "no save lines keep the defaults", conf: "port 1\n", save: "3600 1 300 100 60 10000"},
		{name: "save lines accumulate", conf: "save 900 1\nsave 300 10\nsave 60 10000 30 5\n", save: "900 1 300 10 60 10000 30 5"},
		{name: "save empty clears", conf: "save 900 1\nsave \"\"\n", save: ""},
		{name: "save after empty", conf: "save ''\nsave 10 1\n", save: "10 1"},
		{name: "bind words", conf: "bind 127.0.0.1 -::1\n", bind: "127.0.0.1 -::1"},
		{name: "last bind wins", conf: "bind 10.0.0.1\nBIND 127.0.0.1\n", bind: "127.0.0.1"},
		{name: "ignored once each", conf: "io-threads 4\nsupervised auto\nio-threads 2\nlazyfree-lazy-expire no\n",
			ignored: []string{"io-threads", "supervised", "lazyfree-lazy-expire"}},
	} {
		c, ign, err := loadConf(t, writeConf(t, dir, "a.conf", tc.conf))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.save != "" || strings.Contains(tc.conf, "save") {
			if got := FormatSaveRules(c.Persist.Save); got != tc.save {
				t.Errorf("%s: save %q, want %q", tc.name, got, tc.save)
			}
		}
		if tc.bind != "" && c.Bind != tc.bind {
			t.Errorf("%s: bind %q, want %q", tc.name, c.Bind, tc.bind)
		}
		var names []string
		for _, d := range ign {
			names = append(names, d.Name)
		}
		if !slices.Equal(names, tc.ignored) {
			t.Errorf("%s: ignored %q, want %q", tc.name, names, tc.ignored)
		}
	}
}

// TestConfigInclude: include reads another file in place (a later line of
// the main file wins), a glob includes every match, and a file including
// itself fails instead of recursing.
func TestConfigInclude(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "a.part", "maxclients 7\nport 8\n")
	writeConf(t, dir, "b.part", "timeout 9\n")
	main := writeConf(t, dir, "main.conf", "port 1\ninclude "+filepath.Join(dir, "*.part")+"\nmaxclients 3\n")
	c, _, err := loadConf(t, main)
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8 || c.MaxClients != 3 || c.Timeout != 9 {
		t.Errorf("port %d maxclients %d timeout %d; want 8 3 9", c.Port, c.MaxClients, c.Timeout)
	}
	loop := filepath.Join(dir, "loop.conf")
	writeConf(t, dir, "loop.conf", "include "+loop+"\n")
	if _, _, err := loadConf(t, loop); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("include loop: %v", err)
	}
	missing := writeConf(t, dir, "m.conf", "\ninclude "+filepath.Join(dir, "nope.conf")+"\n")
	var fe *ConfigFileError
	if _, _, err := loadConf(t, missing); !errors.As(err, &fe) || fe.Line != 2 || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing include: %v", err)
	}
	// An error inside an included file names that file and its line.
	writeConf(t, dir, "bad.inc", "port 1\nnosuch 1\n")
	bad := writeConf(t, dir, "bad.conf", "include "+filepath.Join(dir, "bad.inc")+"\n")
	if _, _, err := loadConf(t, bad); !errors.As(err, &fe) || fe.Line != 2 || fe.File != filepath.Join(dir, "bad.inc") {
		t.Errorf("error in an include: %v", err)
	}
}

// TestIgnoredDirectivesAreNotRows: a directive is either a row or ignored,
// so that an ignored name never hides a row (rows win in ApplyConfig).
func TestIgnoredDirectivesAreNotRows(t *testing.T) {
	for name := range ignoredDirectives {
		if LookupConfigParam(name) != nil {
			t.Logf("%s is a row now; remove it from ignoredDirectives", name)
		}
	}
	for name := range unsupportedDirectives {
		if LookupConfigParam(name) != nil || ignoredDirectives[name] {
			t.Errorf("%s is both unsupported and a row or ignored", name)
		}
	}
}

// FuzzSplitConfigLine: the splitter never panics, and words quoted by
// quoteConfigWord (what CONFIG REWRITE writes) split back to themselves.
func FuzzSplitConfigLine(f *testing.F) {
	for _, s := range []string{"save 60 1", `a "b\x41" 'c\'d'`, `"x`, `a"b c"d`, "\"\\\"", "\t\v\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := SplitConfigLine(line)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = quoteConfigWord(w)
		}
		back, err := SplitConfigLine(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(back, words) {
			t.Fatalf("%q: words %q, quoted %q, back %q, %v", line, words, quoted, back, err)
		}
	})
}

// FuzzApplyConfig: any file text either applies or fails with a
// *ConfigFileError naming a line of the file; nothing panics.
func FuzzApplyConfig(f *testing.F) {
	for _, s := range []string{"port 1\nsave 60 1\nsave \"\"\n", "bind a -b\nio-threads 4\n", "maxmemory 1gb\nx", "include\n", "'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		dirs, err := ParseConfig("f.conf", text)
		if err == nil {
			c := DefaultConfig()
			_, err = ApplyConfig(dirs, &c, nil)
		}
		var fe *ConfigFileError
		if err != nil && (!errors.As(err, &fe) || fe.Line < 1 || fe.Line > strings.Count(text, "\n")+1) {
			t.Fatalf("%q: error %v", text, err)
		}
	})
}
