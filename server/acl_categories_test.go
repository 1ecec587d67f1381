package server

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/command"
)

// TestACLCategoriesMatchRedis compares every row's ACL categories with
// redis-server 7.0.15's (testdata/acl_categories_redis70.txt, from its
// COMMAND INFO) for the commands both servers have.
func TestACLCategoriesMatchRedis(t *testing.T) {
	f, err := os.Open("testdata/acl_categories_redis70.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, cats, _ := strings.Cut(line, " ")
		want[name] = cats
	}
	s, _, _ := newTestServer(t)
	compared := 0
	for _, c := range s.table.All() {
		w, ok := want[c.FullName()]
		if !ok {
			continue
		}
		compared++
		if got := strings.Join(c.Categories().Names(), " "); got != sortCats(w) {
			t.Errorf("%s: categories %q, redis-server has %q", c.FullName(), got, sortCats(w))
		}
	}
	if compared < 150 {
		t.Fatalf("compared only %d commands", compared)
	}
}

// sortCats puts a space-separated list of category names in Redis's order.
func sortCats(list string) string {
	var out []string
	for _, n := range command.CategoryNames() {
		for _, x := range strings.Fields(list) {
			if x == n {
				out = append(out, n)
			}
		}
	}
	return strings.Join(out, " ")
}

// TestACLKeyAccessMatchesRedis compares what every row does with its keys
// (command.KeyAccessAt, for ACL %R~/%W~ patterns) with redis-server
// 7.0.15's key specs (testdata/acl_keyaccess_redis70.txt), key spec i
// being the row's key i.
func TestACLKeyAccessMatchesRedis(t *testing.T) {
	f, err := os.Open("testdata/acl_keyaccess_redis70.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0][0] == '#' {
			continue
		}
		want[fields[0]] = fields[1:]
	}
	names := map[command.KeyAccess]string{command.KeyAny: "-", command.KeyRead: "R", command.KeyWrite: "W", command.KeyReadWrite: "RW"}
	s, _, _ := newTestServer(t)
	compared := 0
	for _, c := range s.table.All() {
		w, ok := want[c.FullName()]
		if !ok || c.FirstKey == 0 && c.Locks == nil {
			continue
		}
		compared++
		for i, perm := range w {
			if got := names[c.KeyAccessAt(i)]; got != perm {
				t.Errorf("%s key %d: access %s, redis-server's key spec %s", c.FullName(), i, got, perm)
			}
		}
	}
	if compared < 100 {
		t.Fatalf("compared only %d commands", compared)
	}
}
