package persistence

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestLogLatencyEvents: a log with LogConfig.Latency reports each write
// of pending records, and under appendfsync always each fsync, for the
// server's latency monitor.
func TestLogLatencyEvents(t *testing.T) {
	for _, tc := range []struct {
		policy FsyncPolicy
		want   []string
	}{
		{FsyncAlways, []string{"aof-write", "aof-fsync-always"}},
		{FsyncEverySec, []string{"aof-write"}},
	} {
		var mu sync.Mutex
		var got []string
		cfg := testCfg(newCrashFS(1), tc.policy)
		cfg.Latency = func(event string, d time.Duration) {
			if d < 0 {
				t.Errorf("%s: negative duration %v", event, d)
			}
			mu.Lock()
			got = append(got, event)
			mu.Unlock()
		}
		l, err := OpenLog(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Load(func(Effect) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(l.Append(sampleEffects()[0])); err != nil {
			t.Fatal(err)
		}
		l.Close()
		mu.Lock()
		if !slices.Equal(got, tc.want) {
			t.Errorf("policy %v: events %q, want %q", tc.policy, got, tc.want)
		}
		mu.Unlock()
	}
}
