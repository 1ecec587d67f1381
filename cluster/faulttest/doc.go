// Package faulttest is the multi-process fault harness of Turnstile's
// replication (issue 12): it runs real turnstile processes, breaks them, and
// checks what clients saw.
//
// What it proves, for every fault schedule it runs:
//
//   - Linearizability: the history of SET, GET and INCR operations that
//     concurrent clients recorded (invocation and return times, outcomes) is
//     checked per key with porcupine against a sequential string/counter
//     model. An operation whose outcome the client never learned (a timeout,
//     a dropped connection, an error reply other than CLUSTERDOWN, which the
//     cluster sends only for a command it did not run) may or may not have
//     taken effect: it is kept with an open end, so the checker may place it
//     anywhere after its invocation, or nowhere for its effect. Those that
//     cannot change the verdict are pruned first (prune.go): elections leave
//     too many for porcupine's search otherwise. 0 violations are allowed.
//   - No acknowledged write is lost: after the faults heal, a final read of
//     every key (through a node that can write) must reflect every SET and
//     INCR a client was told succeeded (CheckLostWrites).
//   - CL.THROTTLE never over-allows: for one key of max_burst B and period T
//     per token, in every window of length D the allowed replies whose call
//     and reply both fall inside it are at most (B+1) + ⌊D/T⌋
//     (CheckThrottle). That is GCRA's bound from any starting state, so it
//     holds across failover only if no allowed reply was forgotten. Issue
//     12 allows the calls of unknown outcome on top; they cannot excuse
//     anything (they only ever take tokens), so the strict bound is the
//     one enforced, and the looser one is reported beside it.
//
// How: the package builds the turnstile binary once per test run, starts N
// nodes, each a process with its own directory, RESP port and loopback IP
// 127.0.0.(i+1). In cluster mode each node binds its Raft port on its own IP
// and advertises (--raft-advertise) the address of a TCP proxy (proxy.go)
// that forwards to it; the Raft transport dials from the node's own IP, so
// the proxy knows the sending node of every connection by its remote IP and
// can cut any set of (from, to) pairs: isolate a node, split a majority from
// a minority, cut one direction only, heal. Only Raft traffic goes through
// the proxies; clients and follower-to-leader forwarding reach RESP ports
// directly. Processes are killed with SIGKILL, stopped with SIGTERM, paused
// with SIGSTOP/SIGCONT and restarted on the same directory and ports. A
// seeded generator (schedule.go) mixes these faults into reproducible
// schedules; the seed is printed, and TURNSTILE_FAULT_SEED replays it.
//
// The process and proxy tests are Linux only (they need all of 127/8 on
// the loopback interface, and SIGSTOP); the checkers and the generator are
// plain Go.
//
// Until the binary knows --node-id, the cluster tests skip and the same
// harness runs against one node with appendonly and appendfsync always,
// killed and restarted (TestSingleNodeFaults); TestHarnessCatchesVolatileNode
// shows on real processes that each check fails a node that forgets, and
// TestHarnessCatchesStaleReads that the linearizability check fails a
// cluster whose followers answer reads themselves (--stale-reads).
//
// Running it:
//
//	go test ./cluster/faulttest/                    # CI's run: 20 schedules, ~1-3 min
//	TURNSTILE_FAULT_SEED=N go test ./cluster/faulttest/   # the same schedules again
//	TURNSTILE_SOAK=30m TURNSTILE_SOAK_REPORT=soak.md \
//	    go test -run ClusterFaults -timeout 40m ./cluster/faulttest/   # soak, summary appended to soak.md
//	TURNSTILE_FAILOVER=1 go test -run 'FailoverTime|RestartTime' -v ./cluster/faulttest/
//
// (TestSingleNodeFaults soaks the same way, for as long again.) A seed replays the schedules, not the interleaving of the clients'
// operations with them. A failed schedule leaves its history (and
// porcupine's visualization when it is not linearizable) in a directory
// named in the failure, and the tails of the nodes' logs in the test log.
package faulttest
