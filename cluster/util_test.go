package cluster

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/clock"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// throttle sends CL.THROTTLE key 4 1 60 (5 requests, then one a minute).
func throttle(t *testing.T, n *tnode, key string) []int64 {
	t.Helper()
	v, err := n.client.Do(ctx, "CL.THROTTLE", key, 4, 1, 60).Int64Slice()
	if err != nil {
		t.Fatalf("CL.THROTTLE on %s: %v", n.id, err)
	}
	return v
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lagClock is the monotonic clock shifted by a fixed offset.
type lagClock struct {
	base   *clock.Monotonic
	offset int64
}

func newLagClock(d time.Duration) *lagClock {
	return &lagClock{base: clock.NewMonotonic(), offset: int64(d)}
}

func (c *lagClock) Now() int64 { return c.base.Now() + c.offset }
