package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/server"
)

// TestPolicyChangesReplicate: rate-limit rules changed on any node (RL.POLICY
// SET and DEL are forwarded to the leader, SIGHUP goes to the leader) are
// the same on every node, survive a failover, and win over a node's own
// policy file when it restarts; a follower refuses a SIGHUP reload.
func TestPolicyChangesReplicate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.json")
	writeRules := func(ids ...string) {
		var parts []string
		for _, id := range ids {
			parts = append(parts, `{"id":"`+id+`","algorithm":"fixed","limit":2,"per":"1h"}`)
		}
		if err := os.WriteFile(file, []byte(`{"rules":[`+strings.Join(parts, ",")+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeRules("f")
	tc := newTestCluster(t)
	tc.serverTweak = func(c *server.Config) { c.RLPolicies = file } // one file for all, like a shared config map
	tc.three()
	l := tc.leader()
	f := tc.others(l)[0]
	list := func(n *tnode) []string {
		t.Helper()
		v, err := n.client.Do(ctx, "RL.POLICY", "LIST").StringSlice()
		if err != nil {
			t.Fatalf("%s: RL.POLICY LIST: %v", n.id, err)
		}
		return v
	}
	expectEverywhere := func(want ...string) {
		t.Helper()
		tc.converge() // the keyspaces, server state records included, are equal
		for _, n := range tc.running() {
			if got := list(n); !slices.Equal(got, want) {
				t.Fatalf("%s holds rules %v, want %v", n.id, got, want)
			}
		}
	}
	must(t, f.client.Do(ctx, "RL.POLICY", "SET", "x", "fixed", "2", "1h").Err()) // forwarded
	must(t, l.client.Do(ctx, "RL.POLICY", "SET", "y", "gcra", "5", "1s").Err())
	must(t, f.client.Do(ctx, "RL.POLICY", "DEL", "f").Err())
	expectEverywhere("x", "y")

	// The file changes: a follower refuses the signal, the leader applies
	// it for everyone.
	writeRules("g", "x")
	if _, err := f.srv.ReloadPolicies(); err == nil || !strings.Contains(err.Error(), "does not lead") {
		t.Fatalf("follower's SIGHUP reload: %v", err)
	}
	if n, err := l.srv.ReloadPolicies(); err != nil || n != 2 {
		t.Fatalf("leader's SIGHUP reload: %d, %v", n, err)
	}
	expectEverywhere("g", "x")

	// Spend rule x's limit, then fail over: the new leader has the rule and
	// the state.
	for i := range 3 {
		v, err := l.client.Do(ctx, "RL.CHECK", "x", "v").Slice()
		must(t, err)
		if allowed := v[0].(int64); (allowed == 1) != (i < 2) {
			t.Fatalf("RL.CHECK %d before failover: %v", i+1, v)
		}
	}
	l.stop()
	nl := tc.leader()
	v, err := nl.client.Do(ctx, "RL.CHECK", "x", "v").Slice()
	must(t, err)
	if v[0].(int64) != 0 {
		t.Fatalf("after failover RL.CHECK x was allowed: %v", v)
	}

	// The old leader restarts with a file that says otherwise: the
	// replicated rules win on a cluster node.
	writeRules("h")
	tc.start(l.id, false, "", nil)
	expectEverywhere("g", "x")
}
