package server

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// rueidis with its default options turns client-side caching on (HELLO 3,
// CLIENT TRACKING ON OPTIN, then CLIENT CACHING YES + MULTI/PTTL/GET/EXEC
// for each DoCache miss). A second DoCache is answered from its cache with
// no round trip, and a write by another client invalidates the entry.
func TestIntegrationRueidisClientSideCache(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		s, addr, _ := newTestServer(t, loop)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			t.Fatalf("rueidis connect: %v", err)
		}
		defer client.Close()
		if err := client.Do(ctx, client.B().Set().Key("k").Value("v1").Build()).Error(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		get := func() (string, bool) {
			t.Helper()
			r := client.DoCache(ctx, client.B().Get().Key("k").Cache(), time.Minute)
			v, err := r.ToString()
			if err != nil {
				t.Fatalf("DoCache GET: %v", err)
			}
			return v, r.IsCacheHit()
		}
		if v, hit := get(); v != "v1" || hit {
			t.Fatalf("first DoCache = %q (hit %v), want v1 from the server", v, hit)
		}
		getID := s.table.Lookup([]byte("get"))
		before := s.stats.cmds[getID.ID()].calls.Load()
		if v, hit := get(); v != "v1" || !hit {
			t.Fatalf("second DoCache = %q (hit %v), want v1 from the cache", v, hit)
		}
		if after := s.stats.cmds[getID.ID()].calls.Load(); after != before {
			t.Fatalf("a cache hit reached the server: GET calls %d -> %d", before, after)
		}
		// Another connection writes: the cached entry is invalidated.
		other := dialRaw(t, addr)
		if got := other.do("SET", "k", "v2"); got != "+OK\r\n" {
			t.Fatalf("SET by another client: %q", got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			v, _ := get()
			if v == "v2" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("DoCache still returns %q 5 s after the write", v)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if v, hit := get(); v != "v2" || !hit {
			t.Fatalf("DoCache after refetch = %q (hit %v), want v2 from the cache", v, hit)
		}
		// A flush invalidates everything.
		other.do("FLUSHALL")
		deadline = time.Now().Add(5 * time.Second)
		for {
			r := client.DoCache(ctx, client.B().Get().Key("k").Cache(), time.Minute)
			if rueidis.IsRedisNil(r.Error()) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("DoCache after FLUSHALL: %v", r.Error())
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
