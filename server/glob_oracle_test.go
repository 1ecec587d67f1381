package server

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestGlobOracle compares globMatch with a real Redis's KEYS on random keys
// and patterns (a private redis-server, as in TestCompatWithRedis).
func TestGlobOracle(t *testing.T) {
	addr := startRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: addr, DB: 15, Protocol: 2})
	defer rc.Close()
	if err := rc.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	defer rc.FlushDB(ctx)
	alphabet := []byte("abAB-[]^\\*?z\x80\xff")
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(maxLen int) string {
		n := r.IntN(maxLen + 1)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	keys := map[string]bool{"": true}
	for len(keys) < 300 {
		keys[gen(7)] = true
	}
	for k := range keys {
		if err := rc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	iters := 3000
	if testing.Short() {
		iters = 300
	}
	for i := 0; i < iters; i++ {
		pat := gen(8)
		if pat == "*" {
			continue // KEYS * is special-cased: no filter
		}
		got, err := rc.Keys(ctx, pat).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, k := range got {
			want[k] = true
		}
		for k := range keys {
			if m := globMatch([]byte(pat), []byte(k), false); m != want[k] {
				t.Errorf("pattern %q key %q: redis %v, globMatch %v", pat, k, want[k], m)
			}
		}
	}
}

// TestGlobOracleTable checks the expectations of globCases against Redis.
func TestGlobOracleTable(t *testing.T) {
	addr := startRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: addr, DB: 15, Protocol: 2})
	defer rc.Close()
	for _, tc := range globCases {
		if err := rc.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		rc.Set(ctx, tc.s, "v", 0)
		got, err := rc.Keys(ctx, tc.pat).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := tc.want || (tc.pat == "*") // KEYS * is unfiltered
		if (len(got) == 1) != want {
			t.Errorf("redis KEYS %q with key %q: %q, table says %v", tc.pat, tc.s, got, tc.want)
		}
	}
	rc.FlushDB(ctx)
}
