package main

import (
	"log/slog"
	"strings"
	"testing"
)

func TestClusterFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // error substring; "" = a node is built
	}{
		{[]string{"--raft-addr", "127.0.0.1:17000"}, "need --node-id"},
		{[]string{"--join", "127.0.0.1:7000"}, "need --node-id"},
		{[]string{"--node-id", "n1"}, "needs --raft-addr"},
		{[]string{"--node-id", "n1", "--raft-addr", "127.0.0.1:17000", "--appendonly", "yes"}, "appendonly"},
		{[]string{"--node-id", "n1", "--raft-addr", "127.0.0.1:17000", "--port", "0"}, "fixed --port"},
		{[]string{"--node-id", "n1", "--raft-addr", "127.0.0.1:17000", "--bind", "0.0.0.0"}, "--announce"},
		{[]string{"--node-id", "n1", "--raft-addr", "127.0.0.1:17000", "--bootstrap", "--join", "127.0.0.1:7000"}, "exclude"},
		{[]string{"--node-id", "n1", "--raft-addr", "127.0.0.1:17000", "--dir", t.TempDir()}, ""},
		{[]string{"--node-id", "n1", "--raft-addr", "0.0.0.0:17000", "--bind", "0.0.0.0", "--announce", "10.0.0.1:6379", "--raft-advertise", "10.0.0.1:17000"}, ""},
	} {
		cfg, rt, _, err := parseConfig(tc.args)
		if err != nil {
			t.Fatalf("%v: parse: %v", tc.args, err)
		}
		node, err := rt.cluster.newNode(&cfg, slog.Default())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one mentioning %q", tc.args, err, tc.want)
		case tc.want == "" && (cfg.Replication == nil || cfg.Persist.Save != nil || node == nil):
			t.Errorf("%v: node %v, replication %v, save rules %v", tc.args, node, cfg.Replication, cfg.Persist.Save)
		}
	}
}
