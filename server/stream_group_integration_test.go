package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestStreamGroupsWithGoRedis runs a work queue on consumer groups through
// go-redis, on a server whose clock the test moves: two workers read, one
// stalls, the other claims its entries once they are idle long enough,
// acknowledges them, and a blocked reader is woken by a new entry. Every
// delivery time and idle time is exact (the manual clock), and the groups
// survive a restart from the append-only log and from its rewrite.
func TestStreamGroupsWithGoRedis(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	ctx := context.Background()
	client := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: r.srv.Addr().String(), MaxRetries: -1, DisableIdentity: true})
		t.Cleanup(func() { c.Close() })
		return c
	}
	rc := client()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rc.XGroupCreateMkStream(ctx, "jobs", "workers", "$").Err())
	for _, id := range []string{"1-0", "2-0", "3-0", "4-0"} {
		must(rc.XAdd(ctx, &redis.XAddArgs{Stream: "jobs", ID: id, Values: []string{"job", id}}).Err())
	}
	read := func(consumer string, count int64) []string {
		t.Helper()
		res, err := rc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "workers", Consumer: consumer, Streams: []string{"jobs", ">"}, Count: count}).Result()
		must(err)
		var ids []string
		for _, m := range res[0].Messages {
			ids = append(ids, m.ID)
		}
		return ids
	}
	if got := read("alice", 3); len(got) != 3 || got[0] != "1-0" {
		t.Fatalf("alice read %v", got)
	}
	r.clk.Advance(5 * time.Second)
	if got := read("bob", 0); len(got) != 1 || got[0] != "4-0" {
		t.Fatalf("bob read %v", got)
	}
	// alice's three have been pending for 5 s, bob's one for none.
	pend, err := rc.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "jobs", Group: "workers", Idle: 4 * time.Second, Start: "-", End: "+", Count: 10}).Result()
	must(err)
	if len(pend) != 3 || pend[0].Consumer != "alice" || pend[0].Idle != 5*time.Second || pend[0].RetryCount != 1 {
		t.Fatalf("pending idle >= 4s: %+v", pend)
	}
	// bob claims alice's stalled entries: 1-0 by XCLAIM, the rest by
	// XAUTOCLAIM (its cursor then ends the scan).
	claimed, err := rc.XClaimJustID(ctx, &redis.XClaimArgs{Stream: "jobs", Group: "workers", Consumer: "bob", MinIdle: 4 * time.Second, Messages: []string{"1-0", "4-0"}}).Result()
	must(err)
	if len(claimed) != 1 || claimed[0] != "1-0" {
		t.Fatalf("XCLAIM took %v (4-0 is not idle)", claimed)
	}
	auto, next, err := rc.XAutoClaimJustID(ctx, &redis.XAutoClaimArgs{Stream: "jobs", Group: "workers", Consumer: "bob", MinIdle: 4 * time.Second, Start: "0"}).Result()
	must(err)
	if len(auto) != 2 || auto[0] != "2-0" || auto[1] != "3-0" || next != "0-0" {
		t.Fatalf("XAUTOCLAIM took %v, next %s", auto, next)
	}
	summary, err := rc.XPending(ctx, "jobs", "workers").Result()
	must(err)
	if summary.Count != 4 || summary.Consumers["bob"] != 4 || summary.Consumers["alice"] != 0 {
		t.Fatalf("summary %+v", summary)
	}
	if n, err := rc.XAck(ctx, "jobs", "workers", "1-0", "2-0").Result(); err != nil || n != 2 {
		t.Fatalf("XACK: %d, %v", n, err)
	}
	// A blocked reader is woken by the next entry.
	woke := make(chan []redis.XStream, 1)
	waiter := client()
	go func() {
		res, _ := waiter.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "workers", Consumer: "carol", Streams: []string{"jobs", ">"}, Block: 10 * time.Second}).Result()
		woke <- res
	}()
	deadline := time.Now().Add(5 * time.Second)
	for r.srv.blocked.n.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reader did not block")
		}
		time.Sleep(time.Millisecond)
	}
	must(rc.XAdd(ctx, &redis.XAddArgs{Stream: "jobs", ID: "5-0", Values: []string{"job", "5"}}).Err())
	select {
	case res := <-woke:
		if len(res) != 1 || len(res[0].Messages) != 1 || res[0].Messages[0].ID != "5-0" {
			t.Fatalf("woken with %+v", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked reader was not woken")
	}
	groups, err := rc.XInfoGroups(ctx, "jobs").Result()
	must(err)
	if len(groups) != 1 || groups[0].Pending != 3 || groups[0].Consumers != 3 || groups[0].LastDeliveredID != "5-0" || groups[0].EntriesRead != 5 || groups[0].Lag != 0 {
		t.Fatalf("XINFO GROUPS %+v", groups)
	}
	full := r.rc.do("XINFO", "STREAM", "jobs", "FULL")
	r.restart()
	if got := r.rc.do("XINFO", "STREAM", "jobs", "FULL"); got != full {
		t.Fatalf("after replaying the log:\n got  %q\n want %q", got, full)
	}
	rewriteLog(t, r.rc)
	r.restart()
	if got := r.rc.do("XINFO", "STREAM", "jobs", "FULL"); got != full {
		t.Fatalf("after loading the rewritten log:\n got  %q\n want %q", got, full)
	}
}

// TestBlockedConsumersShareEntries: consumers blocked on one group are
// each woken by new entries, and every entry goes to exactly one of them
// (the group's last ID moves as each takes its entry): no entry is lost
// or delivered twice, and the PEL names who has each.
func TestBlockedConsumersShareEntries(t *testing.T) {
	_, addr, _ := newTestServer(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
	defer rc.Close()
	if err := rc.XGroupCreateMkStream(ctx, "q", "g", "$").Err(); err != nil {
		t.Fatal(err)
	}
	const consumers, entries = 4, 40
	got := make(chan string, entries+consumers)
	done := make(chan struct{})
	for i := range consumers {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
		defer c.Close()
		name := fmt.Sprint("c", i)
		go func() {
			for {
				res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: name, Streams: []string{"q", ">"}, Count: 1, Block: 2 * time.Second}).Result()
				select {
				case <-done:
					return
				default:
				}
				if err != nil {
					continue // the block timed out
				}
				for _, m := range res[0].Messages {
					got <- name + " " + m.ID
				}
			}
		}()
	}
	for i := 1; i <= entries; i++ {
		if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: "q", ID: fmt.Sprint(i, "-0"), Values: []string{"n", fmt.Sprint(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	owner := map[string]string{}
	deadline := time.After(10 * time.Second)
	for len(owner) < entries {
		select {
		case g := <-got:
			name, id, _ := strings.Cut(g, " ")
			if prev, dup := owner[id]; dup {
				t.Fatalf("%s delivered to %s and to %s", id, prev, name)
			}
			owner[id] = name
		case <-deadline:
			t.Fatalf("%d of %d entries delivered", len(owner), entries)
		}
	}
	close(done)
	pend, err := rc.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "q", Group: "g", Start: "-", End: "+", Count: 100}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != entries {
		t.Fatalf("%d pending, want %d", len(pend), entries)
	}
	for _, p := range pend {
		if owner[p.ID] != p.Consumer {
			t.Fatalf("%s pending for %s, delivered to %s", p.ID, p.Consumer, owner[p.ID])
		}
	}
}
