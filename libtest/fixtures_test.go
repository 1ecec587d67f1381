package libtest

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scriptsDir holds the Lua scripts the libraries send, byte for byte as the
// server receives them, with their SHA1s in SHA1SUMS (see its README.md).
const scriptsDir = "testdata/scripts"

// TestScriptFixtures checks that every saved library script still has the
// SHA1 recorded for it, so the fingerprints taken from these files match
// what the libraries send (an editor that strips trailing spaces or changes
// line ends would break that), and that no script is left unlisted.
func TestScriptFixtures(t *testing.T) {
	f, err := os.Open(filepath.Join(scriptsDir, "SHA1SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 40 {
			t.Fatalf("SHA1SUMS line %d: %q, want \"<sha1>  <file>\"", line, sc.Text())
		}
		listed[name] = true
		src, err := os.ReadFile(filepath.Join(scriptsDir, name))
		if err != nil {
			t.Errorf("SHA1SUMS line %d: %v", line, err)
			continue
		}
		got := sha1.Sum(src)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: SHA1 %x, SHA1SUMS says %s", name, got, sum)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(scriptsDir, "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		if !listed[filepath.Base(p)] {
			t.Errorf("%s is not in SHA1SUMS", p)
		}
	}
	if len(files) == 0 {
		t.Error("no scripts in " + scriptsDir)
	}
}
