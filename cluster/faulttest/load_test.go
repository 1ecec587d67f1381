//go:build linux

package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// workload is what the clients of one schedule run: each client has a
// counter and a register of its own, all share one counter, one register
// and one CL.THROTTLE key. Every client sends each operation to a node
// chosen at random (a follower forwards to the leader).
type workload struct {
	prefix    string // of every key, so each schedule starts from absent keys
	clients   int
	maxOps    int           // per client: the loop's count bound
	opTimeout time.Duration // a reply later than this is an unknown outcome
	burst     int64         // CL.THROTTLE max_burst
	count     int64         // tokens per period
	period    int64         // seconds
}

func (w workload) counter(c int) string  { return fmt.Sprintf("%sctr:%d", w.prefix, c) }
func (w workload) register(c int) string { return fmt.Sprintf("%sreg:%d", w.prefix, c) }
func (w workload) throttleKey() string   { return w.prefix + "thr" }

// emission is the time one token stands for (period/count).
func (w workload) emission() time.Duration {
	return time.Duration(w.period) * time.Second / time.Duration(w.count)
}

// kvKeys are the keys SET, GET and INCR touch; client -1 is the shared one.
func (w workload) kvKeys() []string {
	var keys []string
	for c := -1; c < w.clients; c++ {
		keys = append(keys, w.counter(c), w.register(c))
	}
	return keys
}

// runLoad runs the clients until ctx is done or each has run maxOps
// operations, and returns what they saw. Times are since base.
func runLoad(ctx context.Context, c *cluster, w workload, seed uint64, base time.Time) History {
	var mu sync.Mutex
	var h History
	var wg sync.WaitGroup
	for id := 0; id < w.clients; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			ops := runClient(ctx, c, w, id, rand.New(rand.NewPCG(seed, uint64(id))), base)
			mu.Lock()
			h = append(h, ops...)
			mu.Unlock()
		}(id)
	}
	wg.Wait()
	return h
}

func runClient(ctx context.Context, c *cluster, w workload, id int, r *rand.Rand, base time.Time) History {
	clients := make([]*redis.Client, len(c.nodes))
	for i := range clients {
		clients[i] = c.client(i, w.opTimeout)
		defer clients[i].Close()
	}
	var h History
	for seq := 0; seq < w.maxOps && ctx.Err() == nil; seq++ {
		n := r.IntN(len(clients))
		own := r.IntN(3) > 0 // two thirds of kv operations on the client's own keys
		kc := id
		if !own {
			kc = -1
		}
		op := Op{Client: id, Node: n}
		switch r.IntN(4) {
		case 0:
			op.Kind, op.Key = Incr, w.counter(kc)
		case 1:
			op.Kind, op.Key, op.Arg = Set, w.register(kc), fmt.Sprintf("c%d-%d", id, seq)
		case 2:
			op.Kind = Get
			if op.Key = w.register(kc); r.IntN(2) == 0 {
				op.Key = w.counter(kc)
			}
		default:
			op.Kind, op.Key = Throttle, w.throttleKey()
		}
		op.Call = time.Since(base).Nanoseconds()
		err := do(clients[n], w, &op)
		op.Return = time.Since(base).Nanoseconds()
		op.Outcome, op.Err = classify(err)
		var reply redis.Error
		op.Reply = errors.As(err, &reply)
		h = append(h, op)
		if op.Outcome != OK { // the node is down or busy: do not spin
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(5+r.IntN(20)) * time.Millisecond):
			}
		}
	}
	return h
}

// do sends op and stores the reply in it.
func do(rc *redis.Client, w workload, op *Op) error {
	ctx := context.Background() // the client's own timeouts bound every call
	switch op.Kind {
	case Incr:
		n, err := rc.Incr(ctx, op.Key).Result()
		op.Value, op.Exists = strconv.FormatInt(n, 10), true
		return err
	case Set:
		return rc.Set(ctx, op.Key, op.Arg, 0).Err()
	case Get:
		v, err := rc.Get(ctx, op.Key).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		op.Value, op.Exists = v, err == nil
		return err
	default:
		res, err := rc.Do(ctx, "CL.THROTTLE", op.Key, w.burst, w.count, w.period).Int64Slice()
		if err == nil && len(res) != 5 {
			err = fmt.Errorf("CL.THROTTLE replied %v", res)
		}
		op.Allowed = err == nil && res[0] == 0
		return err
	}
}

// classify maps a client error to an outcome: a failed dial proves the
// command was never sent, and a CLUSTERDOWN reply that it was never run
// (the cluster's contract: a node that knows no leader rejects the
// command before running or forwarding it; the harness holds it to that).
// Anything else after sending (a timeout, a dead connection, another error
// reply such as TRYAGAIN) leaves the outcome unknown.
func classify(err error) (Outcome, string) {
	if err == nil {
		return OK, ""
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return Failed, err.Error()
	}
	var reply redis.Error
	if errors.As(err, &reply) && strings.HasPrefix(err.Error(), "CLUSTERDOWN ") {
		return Failed, err.Error()
	}
	return Unknown, err.Error()
}

// finalReads reads every key once the cluster has healed, through the
// leader (or the only node), retrying for up to timeout; each successful
// read is an op marked Final, invoked after every op of the load returned.
func finalReads(c *cluster, keys []string, client int, base time.Time, timeout time.Duration) (History, error) {
	deadline := time.Now().Add(timeout)
	var h History
	for _, key := range keys {
		for {
			n := max(c.leader(), 0)
			rc := c.client(n, time.Second)
			op := Op{Client: client, Node: n, Kind: Get, Key: key, Final: true, Call: time.Since(base).Nanoseconds()}
			err := do(rc, workload{}, &op)
			op.Return = time.Since(base).Nanoseconds()
			rc.Close()
			if err == nil {
				h = append(h, op)
				break
			}
			if time.Now().After(deadline) {
				return h, fmt.Errorf("final read of %s: %w", key, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return h, nil
}
