package server

import (
	"runtime"

	"github.com/turnstile/turnstile/resp"
)

// The replies of a cluster node (replication.go): before a connection
// sends replies of which one read or wrote the keyspace here, it calls
// Replication.Wait, which returns once what they depend on is committed
// and this node's leadership is confirmed. end sets client.replWait for
// every unit that held a shard or read the whole keyspace; Wait is called
// even when the position is already known committed (a deposed leader
// must not answer from its memory). When Wait fails, no reply held back
// is sent: each is replaced by Wait's error (its text is the Redis error
// reply, TRYAGAIN or CLUSTERDOWN), and the connection goes on, unlike the
// append-only log's failure, which closes it.

// syncRepl waits for the pending replies' position to commit, or replaces
// them by Wait's error.
func (c *client) syncRepl() {
	c.replWait = false
	runtime.Gosched() // let other connections append first: one commit covers more
	if err := c.s.repl.Wait(c.logUpto); err != nil {
		c.s.log.Debug("replies withheld: not committed", "client", c.addr, "err", err)
		c.replaceReplies(err.Error())
	}
	// Settled either way: the replies that depended on logUpto are sent
	// or replaced, and later ones wait for their own units.
	c.logDone = max(c.logDone, c.logUpto)
}

// replaceReplies replaces every reply pending in c.w by the error msg.
// Push frames (RESP3 out-of-band data: pub/sub messages, invalidations)
// are kept: they answer no request, and dropping one could lose a
// message that is not in doubt.
func (c *client) replaceReplies(msg string) {
	old := append([]byte(nil), c.w.Bytes()...)
	c.w.Truncate(0)
	var sc resp.ReplyScanner
	for len(old) > 0 {
		n, err := sc.Scan(old)
		if err != nil || n == 0 { // cannot happen: the buffer holds whole replies
			c.s.log.Error("reply buffer not framed; dropping it", "client", c.addr, "err", err)
			return
		}
		if resp.IsPush(old[:n]) {
			c.w.Append(old[:n])
		} else {
			c.w.Error(msg)
		}
		old = old[n:]
	}
}
