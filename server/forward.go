package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// Forwarding: how a cluster node that is not the leader serves the
// commands that need the keyspace (replication.go).
//
// Which commands. runsOnLeader decides from the command table: a command
// with keys, or flagged Write, Readonly, Keyspace (DBSIZE, KEYS, SCAN,
// RANDOMKEY, FLUSHDB, FLUSHALL), Scripting (EVAL and its kin, SCRIPT
// LOAD|EXISTS|FLUSH), Blocking, or Leader (MULTI, EXEC, DISCARD, UNWATCH,
// TIME, SCRIPT KILL). Every other command is node-local and runs here:
// PING, ECHO, HELLO, AUTH, CLIENT, SELECT, INFO, CONFIG, COMMAND, RAFT.*,
// QUIT, RESET, SAVE, BGSAVE, SHUTDOWN, LASTSAVE, and pub/sub (a message
// reaches the subscribers of the node it is published on only). TIME is
// forwarded because the leader's clock is the one that decides expiry and
// throttling. While a forwarded MULTI is open, every command is forwarded
// (the leader queues it, or refuses it and aborts the EXEC), except QUIT,
// RESET and SHUTDOWN, which act at once here. A transaction begun with
// MULTI while this node ran commands itself stays here until its EXEC.
//
// The upstream. Each client connection has its own connection to the
// leader's RESP address (Replication.Route), dialled on its first
// forwarded command (1 s timeout), with AUTH first when the server has a
// requirepass: cluster nodes share one password. The connection's
// protocol and database are mirrored lazily: before a command is forwarded
// outside MULTI, HELLO and SELECT are sent if the client's differ from the
// upstream's, each as a round trip of its own whose reply is not relayed;
// a handshake refused by the leader fails the command with ERR, and the
// upstream is closed. A SELECT queued in a forwarded MULTI switches the
// client's database when the EXEC runs. When Route names another leader,
// the old upstream's pending replies are relayed and it is closed; inside
// a forwarded MULTI that discards the transaction: the command gets a
// TRYAGAIN error and the client's later commands queue here into a
// transaction that EXEC aborts. With no leader known the command gets
// CLUSTERDOWN.
//
// Order and throughput. Forwarded requests are appended to the upstream's
// output buffer; a batch's forwarded requests go out in one write when the
// replies are drained (drainForwards): before any local command runs (its
// reply must come after theirs), at the end of the batch before the
// client's replies are written, before a handshake, and when the buffer
// reaches maxPendingReply (so neither side can fill the other's socket
// buffers while not reading). Draining reads the replies in order and
// appends their bytes, unchanged, to the client's reply buffer: the order
// of replies is the order of requests. RESP3 push frames from the leader
// are not replies; they are relayed where they arrive.
//
// Failure. A dial failure answers the command TRYAGAIN; a failed write or
// read (or a malformed reply) answers every forwarded command still
// waiting TRYAGAIN (its outcome is unknown), closes the upstream and keeps
// the client connection. What lived on the upstream ends with it: a
// forwarded MULTI (as for a change of leader) and WATCHed keys (the next
// EXEC is answered with the null reply of a failed WATCH, and the leader
// gets DISCARD instead of it). A reply normally arrives within
// fwdTimeout; a blocking command (BLPOP ... 0) may wait for ever: while
// one waits at the head of the queue, the replies before it are sent to
// the client, and the read wakes every fwdPoll to notice a killed client
// or one that hung up, which closes the upstream (the leader then gives
// up the wait).
//
// Not carried over: CLIENT TRACKING (a follower's connection does not see
// the leader's keyspace), CLIENT UNBLOCK of a client whose blocking command
// waits on the leader, and scripts cached by EVAL alone (SCRIPT LOAD on
// the leader shares its script with every node, Replication.ShareScript;
// after a failover EVALSHA of an EVAL-cached script may answer NOSCRIPT,
// and clients send the script again).
//
// Ownership: a client's forwarder belongs to its connection goroutine;
// only fwdConn is shared, so that kill can interrupt a read from the
// leader.

const (
	fwdDialTimeout = time.Second
	fwdTimeout     = 5 * time.Second // most a reply (but a blocking command's) may take
	fwdPoll        = time.Second     // a blocking command's check that the client is still there
	fwdMinRead     = 16 << 10        // free space for each read from the leader

	errClusterDown  = "CLUSTERDOWN The cluster is down"
	errMultiLeader  = "TRYAGAIN the leader changed during the transaction, which is discarded"
	errFwdLostReply = "TRYAGAIN lost the connection to the leader; the outcome is unknown: "
)

// errClientGone ends a forwarded wait whose client hung up or was killed.
var errClientGone = errors.New("client connection closed")

// fwdKind is what the connection does with a forwarded command's reply.
type fwdKind uint8

const (
	fwdRelay    fwdKind = iota // relay it
	fwdBlocking                // relay it; it may take for ever
	fwdSelect                  // relay it; the SELECT ran (+OK) or was queued (+QUEUED)
	fwdExec                    // relay it; a queued SELECT took effect if it is an array
	fwdDiscard                 // relay it; a queued SELECT did not take effect
	fwdExecLost                // the EXEC went as DISCARD (watches lost): answer a failed WATCH
)

type fwdPending struct {
	kind fwdKind
	db   int // fwdSelect: the database selected
}

// forwarder is a client's link to the leader.
type forwarder struct {
	addr string   // the leader conn is connected to
	conn net.Conn // nil: not connected
	out  []byte   // requests not written yet
	in   []byte   // replies read; in[r:] not relayed yet
	r    int
	scan resp.ReplyScanner
	// pending has one entry per forwarded request whose reply has not been
	// relayed, oldest first from head.
	pending []fwdPending
	head    int

	db, proto int  // the upstream's database and protocol (proto 0: unknown)
	queuedDB  int  // database of a SELECT queued in the forwarded MULTI (-1: none)
	multi     bool // a MULTI was forwarded, and its EXEC or DISCARD not yet
	watching  bool // WATCH was forwarded since the last EXEC, DISCARD or UNWATCH
	watchLost bool // the upstream holding the watches was closed
}

// runsOnLeader reports whether cmd must run where the keyspace is: on the
// cluster's leader.
func runsOnLeader(cmd *Command) bool {
	const f = command.Write | command.Readonly | command.Keyspace | command.Scripting | command.Blocking | command.Leader
	return cmd.Flags&f != 0 || cmd.FirstKey > 0 || cmd.Locks != nil
}

// staleReadable reports whether cmd only reads the keyspace, so that a
// follower with stale reads on may answer it from its own memory.
func staleReadable(cmd *Command) bool {
	const other = command.Write | command.MayReplicate | command.Scripting | command.Blocking | command.Leader
	return cmd.Has(command.Readonly) && cmd.Flags&other == 0
}

// forwarded forwards the request to the leader and reports true, or
// reports false after relaying the replies of the requests forwarded
// before it, so that it runs here in its turn. Called by handle for every
// request when the server is a cluster node; cmd is nil for an unknown
// command.
func (c *client) forwarded(cmd *Command, args [][]byte) bool {
	if c.forward(cmd, args) {
		return true
	}
	c.drainForwards()
	return false
}

func (c *client) forward(cmd *Command, args [][]byte) bool {
	if c.multi != nil {
		return false // a MULTI opened here runs here
	}
	f := c.fwd
	if f != nil && f.multi {
		if cmd != nil && cmd.Has(command.NoQueue) && !runsOnLeader(cmd) {
			return false // QUIT, RESET, SHUTDOWN
		}
		c.releaseScriptLock()
		leader, self := c.s.repl.Route()
		if self || leader != f.addr || f.conn == nil {
			return c.abortForwardedMulti(cmd)
		}
		c.sendForward(cmd, args)
		return true
	}
	cmd, ok := c.leaderCommand(cmd, args)
	if !ok {
		return false
	}
	leader, self := c.s.repl.Route()
	if self || (staleReadable(cmd) && c.s.repl.StaleReads()) {
		return false
	}
	c.releaseScriptLock() // held from scripts before in the batch: not while waiting for the leader
	if leader == "" {
		c.drainForwards()
		c.w.Error(errClusterDown)
		return true
	}
	if e := c.upstreamTo(leader); e != "" {
		c.w.Error(e)
		return true
	}
	c.sendForward(cmd, args)
	return true
}

// leaderCommand returns the row that runs args (a subcommand's, for a
// container) when the request is to run on the leader, and false when it
// runs here: node-local commands, and requests that fail the local checks
// (arity, unknown subcommand, authentication, permissions, RESP2 pub/sub mode), whose
// error handle writes.
func (c *client) leaderCommand(cmd *Command, args [][]byte) (*Command, bool) {
	if cmd == nil || !c.authed || !cmd.CheckArity(len(args)) {
		return nil, false
	}
	if len(cmd.Subs) > 0 {
		sub, errText := resolveSubcommand(cmd, args)
		if errText != "" {
			return nil, false
		}
		cmd = sub
	}
	if r := c.userOrDefault().get(); !r.open {
		if reason, _ := aclCheck(r, cmd, args); reason != aclOK {
			return nil, false // refused here, by handle
		}
	}
	if c.subs != nil && c.proto.Load() == 2 && c.subscribed() {
		return nil, false // only pub/sub commands, which are local
	}
	return cmd, runsOnLeader(cmd)
}

// abortForwardedMulti handles a command of a forwarded MULTI when the
// leader has changed: the upstream, and with it the transaction, is
// dropped (endUpstream opens a local transaction marked to abort). EXEC
// and DISCARD then run here against that transaction (false); any other
// command is refused.
func (c *client) abortForwardedMulti(cmd *Command) bool {
	c.drainForwards()
	c.endUpstream()
	if cmd != nil && (cmd.Name == "exec" || cmd.Name == "discard") {
		return false
	}
	c.w.Error(errMultiLeader)
	return true
}

// upstreamTo makes sure the upstream is connected to leader, with the
// client's protocol and database. It returns the error reply for the
// command when it cannot.
func (c *client) upstreamTo(leader string) string {
	if c.killed.Load() {
		c.quit = true
		return errFwdLostReply + errClientGone.Error()
	}
	f := c.fwd
	if f == nil {
		f = &forwarder{queuedDB: -1}
		c.fwd = f
	}
	proto := int(c.proto.Load())
	if f.conn != nil && (f.addr != leader || f.proto != proto || f.db != c.db) {
		c.drainForwards() // a handshake or a new upstream waits for every reply before it
		if f.conn != nil && f.addr != leader {
			c.endUpstream()
		}
	}
	if f.conn == nil {
		if e := c.dialUpstream(leader); e != "" {
			return e
		}
	}
	if f.proto != proto {
		if e := c.handshake([]byte("HELLO"), []byte{byte('0' + proto)}); e != "" {
			return e
		}
		f.proto = proto
	}
	if f.db != c.db {
		if e := c.handshake([]byte("SELECT"), fmt.Appendf(nil, "%d", c.db)); e != "" {
			return e
		}
		f.db = c.db
	}
	return ""
}

// dialUpstream connects to the leader and authenticates.
func (c *client) dialUpstream(addr string) string {
	conn, err := net.DialTimeout("tcp", addr, fwdDialTimeout)
	if err != nil {
		return "TRYAGAIN cannot reach the leader at " + addr + ": " + err.Error()
	}
	f := c.fwd
	f.conn, f.addr, f.db, f.proto = conn, addr, 0, 2
	c.fwdConn.Store(&conn)
	if c.killed.Load() { // kill may have looked for the upstream before the store
		conn.SetDeadline(time.Unix(1, 0))
	}
	if pass := *c.s.requirePass.Load(); pass != "" {
		return c.handshake([]byte("AUTH"), []byte(pass))
	}
	return ""
}

// handshake sends one request to the leader on an upstream with no reply
// pending, and reads its reply, which it does not relay. It returns the
// error reply for the forwarded command if the request fails, after
// closing the upstream.
func (c *client) handshake(args ...[]byte) string {
	f := c.fwd
	f.out = resp.AppendRequest(f.out[:0], args...)
	err := c.writeUpstream()
	var reply []byte
	if err == nil {
		reply, err = c.nextReply(false)
	}
	switch {
	case err != nil:
		addr := f.addr
		c.endUpstream()
		return "TRYAGAIN cannot reach the leader at " + addr + ": " + err.Error()
	case reply[0] == '-' || reply[0] == '!':
		c.endUpstream()
		return "ERR the leader refused " + string(args[0]) + ": " + errorText(reply)
	}
	return ""
}

// errorText is the message of an error reply ("-..." or "!<n>...").
func errorText(reply []byte) string {
	if reply[0] == '!' {
		if _, data, ok := cutLine(reply); ok {
			reply = data
		}
	} else {
		reply = reply[1:]
	}
	if n := len(reply); n >= 2 && reply[n-2] == '\r' {
		reply = reply[:n-2]
	}
	return string(reply)
}

// cutLine splits a reply after its first CRLF.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return b[:i], b[i+2:], true
		}
	}
	return b, nil, false
}

// sendForward appends the request to the upstream's output, noting what
// to do with its reply and what it changes of the upstream's state.
func (c *client) sendForward(cmd *Command, args [][]byte) {
	f := c.fwd
	p := fwdPending{kind: fwdRelay}
	name := ""
	if cmd != nil {
		name = cmd.Name
		c.setLastCmd(cmd)
	}
	c.touch(c.s.clock.Now())
	if f.multi {
		switch name {
		case "exec":
			p.kind = fwdExec
			if f.watchLost {
				p.kind = fwdExecLost
				args = [][]byte{[]byte("DISCARD")}
			}
			f.multi, f.watching, f.watchLost = false, false, false
		case "discard":
			p.kind = fwdDiscard
			f.multi, f.watching, f.watchLost = false, false, false
		case "select":
			if len(args) != 2 {
				break // the leader refuses it
			}
			if n, ok := resp.ParseInt(args[1]); ok && n >= 0 && n < int64(c.s.numDBs()) {
				p.kind, p.db = fwdSelect, int(n)
			}
		case "hello":
			f.proto = 0 // HELLO at EXEC changes it: set it again after the transaction
		}
	} else {
		switch {
		case cmd.Has(command.Blocking):
			p.kind = fwdBlocking
		case name == "multi":
			f.multi = true
		case name == "watch":
			f.watching = true
		case name == "unwatch":
			f.watching, f.watchLost = false, false
		}
	}
	f.out = resp.AppendRequest(f.out, args...)
	f.pending = append(f.pending, p)
	if len(f.out) >= maxPendingReply {
		c.drainForwards()
	}
}

// drainForwards writes the forwarded requests and relays every pending
// reply, in order, into the client's reply buffer. On failure the replies
// still pending become TRYAGAIN errors and the upstream is closed.
func (c *client) drainForwards() {
	f := c.fwd
	if f == nil || f.head == len(f.pending) {
		return
	}
	if err := c.writeUpstream(); err != nil {
		c.failForwards(err)
		return
	}
	for f.head < len(f.pending) {
		p := f.pending[f.head]
		reply, err := c.nextReply(p.kind == fwdBlocking)
		if err != nil {
			c.failForwards(err)
			return
		}
		f.head++
		c.relay(p, reply)
	}
	f.pending, f.head = f.pending[:0], 0
}

// relay appends a forwarded command's reply to the client's replies.
func (c *client) relay(p fwdPending, reply []byte) {
	f := c.fwd
	switch p.kind {
	case fwdExecLost:
		f.queuedDB = -1
		c.w.NullArray()
		return
	case fwdSelect:
		switch string(reply) {
		case "+OK\r\n":
			c.setDB(p.db)
			f.db = p.db
		case "+QUEUED\r\n":
			f.queuedDB = p.db
		}
	case fwdExec:
		if executed := reply[0] == '*' && reply[1] != '-'; executed && f.queuedDB >= 0 {
			c.setDB(f.queuedDB)
			f.db = f.queuedDB
		}
		f.queuedDB = -1
	case fwdDiscard:
		f.queuedDB = -1
	}
	c.w.Append(reply)
}

// failForwards answers every pending forwarded command TRYAGAIN, unless
// the client is gone, and closes the upstream.
func (c *client) failForwards(err error) {
	f := c.fwd
	c.s.log.Debug("forwarding to the leader failed", "client", c.addr, "leader", f.addr, "err", err)
	if c.killed.Load() || errors.Is(err, errClientGone) {
		c.quit = true // no one to answer
	} else {
		text := errFwdLostReply + err.Error()
		for ; f.head < len(f.pending); f.head++ {
			c.w.Error(text)
		}
	}
	c.endUpstream()
}

// endUpstream closes the upstream, which must have no reply pending but
// those failForwards answered. What lived on it ends: a forwarded MULTI
// (the client's later commands queue here, into a transaction EXEC
// aborts) and watches (the next EXEC answers as if a key had changed).
func (c *client) endUpstream() {
	f := c.fwd
	if f.conn != nil {
		f.conn.Close()
	}
	c.fwdConn.Store(nil)
	f.conn, f.out, f.in, f.r = nil, nil, nil, 0
	f.scan = resp.ReplyScanner{}
	f.pending, f.head = f.pending[:0], 0
	f.queuedDB = -1
	switch {
	case f.multi:
		f.multi, f.watching, f.watchLost = false, false, false
		m := c.newMulti()
		m.dirty = true
		c.setMulti(m)
	case f.watching:
		f.watching, f.watchLost = false, true
	}
}

// resetForward drops the upstream and everything known about it (RESET,
// and the connection's end).
func (c *client) resetForward() {
	if c.fwd == nil {
		return
	}
	if c.fwd.conn != nil {
		c.fwd.conn.Close()
		c.fwdConn.Store(nil)
	}
	c.fwd = nil
}

// writeUpstream writes the buffered requests.
func (c *client) writeUpstream() error {
	f := c.fwd
	if len(f.out) == 0 {
		return nil
	}
	f.conn.SetWriteDeadline(time.Now().Add(fwdTimeout))
	_, err := f.conn.Write(f.out)
	if cap(f.out) > 4*maxPendingReply {
		f.out = nil
	} else {
		f.out = f.out[:0]
	}
	return err
}

// nextReply returns the next reply from the leader, relaying the push
// frames before it to the client. It is valid until the next read. wait
// means it may take for ever (a blocking command's).
func (c *client) nextReply(wait bool) ([]byte, error) {
	f := c.fwd
	for {
		if f.r < len(f.in) {
			n, err := f.scan.Scan(f.in[f.r:])
			if err != nil {
				return nil, fmt.Errorf("malformed reply from the leader: %w", err)
			}
			if n > 0 {
				reply := f.in[f.r : f.r+n]
				f.r += n
				if resp.IsPush(reply) {
					c.w.Append(reply)
					continue
				}
				return reply, nil
			}
		}
		if err := c.readUpstream(wait); err != nil {
			return nil, err
		}
	}
}

// readUpstream reads more of the leader's replies into f.in. Waiting for
// a blocking command, it first sends the client the replies before it,
// and it checks every fwdPoll that the client is still there.
func (c *client) readUpstream(wait bool) error {
	f := c.fwd
	if f.r == len(f.in) {
		f.in, f.r = f.in[:0], 0
		if cap(f.in) > 4*maxPendingReply { // do not keep a huge reply's buffer
			f.in = nil
		}
	}
	if cap(f.in)-len(f.in) < fwdMinRead {
		n := copy(f.in, f.in[f.r:])
		f.in, f.r = f.in[:n], 0
		if cap(f.in)-n < fwdMinRead {
			f.in = append(make([]byte, 0, max(2*cap(f.in), n+fwdMinRead)), f.in...)
		}
	}
	if wait && c.w.Len() > 0 && (!c.syncLog() || !c.flush()) {
		return errClientGone
	}
	for {
		d := fwdTimeout
		if wait {
			d = fwdPoll
		}
		f.conn.SetReadDeadline(time.Now().Add(d))
		n, err := f.conn.Read(f.in[len(f.in):cap(f.in)])
		f.in = f.in[:len(f.in)+n]
		switch {
		case n > 0:
			return nil
		case c.killed.Load():
			return errClientGone
		case wait && errors.Is(err, os.ErrDeadlineExceeded):
			if c.peerGone() {
				return errClientGone
			}
			c.touch(c.s.clock.Now()) // waiting on a blocking command is not idle (idle.go)
			continue
		case err == nil:
			err = io.ErrNoProgress
		}
		return err
	}
}
