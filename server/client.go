package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/script"
	"github.com/turnstile/turnstile/shards"
)

// maxPendingReply is how much reply data a connection gathers before it
// writes, even if more pipelined requests are waiting.
const maxPendingReply = 64 << 10

// client is one connection. Its fields are owned by the connection's
// goroutine, except those documented as shared.
type client struct {
	hotTick uint32 // limiter calls of this connection, for RL.HOTKEYS sampling (hotkeys.go)
	s       *Server
	id      int64
	conn    net.Conn
	rd      *resp.Reader
	w       resp.Writer
	created int64 // Unix ns
	addr    string
	laddr   string

	db     int  // selected database
	authed bool // passed AUTH (or the default user is on and nopass)
	// user is the user the connection is authenticated as (or will be:
	// default, before AUTH); nil only for internal clients (scripts').
	// Set by the connection's goroutine, read by CLIENT LIST and ACL
	// DELUSER from others.
	user atomic.Pointer[aclUser]
	// memFull is set by handle for the command it runs when memory is at
	// the limit and cannot be freed: the command may not create keys
	// (maxmemory.go).
	memFull bool
	multi   *multiState
	watch   *watchState
	quit    bool        // close after writing the pending replies
	killed  atomic.Bool // set by kill (shared): the connection is to end

	// scriptLock: the connection holds the server's script lock, across the
	// scripts of a pipelined batch (scripting.go); scriptRun counts them.
	scriptLock bool
	scriptRun  int
	native     *nativeHost // runs known scripts natively; made on first use
	// execSaves are the reply offsets of SAVEs inside the running EXEC,
	// which run once it has released its shards (runExecSaves).
	execSaves []int

	fd        int       // the socket, inside serveRaw's callback (Linux); else -1
	recheckAt time.Time // read deadline armed after a short read (serveRaw)
	ctx       Ctx       // reused for every command, so a call does not allocate one
	ex        execution // reused for every command outside MULTI
	exMulti   execution // reused for every EXEC
	ctxMulti  Ctx       // reused for every command of an EXEC
	// spareMulti is the multiState of the last MULTI, kept for the next.
	spareMulti *multiState
	calls      uint64 // commands run, for sampling their duration
	bufHeld    int64  // input and reply buffer bytes accounted in Server.clientMem (clientmem.go)

	// The last command name looked up and what it named: a pipeline
	// usually repeats one command, and comparing bytes is cheaper than the
	// table's case-folding map lookup.
	lastName   []byte
	lastLookup *Command
	// The last EVALSHA digest (as sent) that named a native script, and
	// the native (scripting.nativeBySHA).
	lastSHA    []byte
	lastNative *script.Native

	// ahead holds the arguments and keys of a pipelined request whose
	// command derives its keys (RL.CHECK), for prefetchDerived; reused.
	// hashes[AheadSlot(j)] are the hashes of the keys request j derives,
	// kept from its slot stage for its record stage.
	ahead struct {
		args, keys [][]byte
		buf        []byte
		hashes     [resp.MaxLookahead][]uint64
	}

	logUpto int64 // durability position the pending replies depend on
	logDone int64 // durability position already known to be durable
	// The pending replies from offset logFrom of c.w on (-1: none) are the
	// logReplies replies of the commands from the first whose reply
	// depends on a position past logDone: if the log cannot be written,
	// they are what syncLog replaces with MISCONF errors (noteReply).
	logFrom    int
	logReplies int
	// replWait: a command of the pending replies touched the keyspace on a
	// cluster node, so they wait for Replication.Wait even if logUpto is
	// known committed: Wait also confirms leadership (set by end).
	replWait bool

	// Forwarding to the cluster's leader (forward.go): fwd belongs to the
	// connection goroutine; fwdConn is its upstream connection, for kill.
	fwd     *forwarder
	fwdConn atomic.Pointer[net.Conn]

	// Pub/sub and client-side caching (pubsub.go, tracking.go).
	out     outQueue    // output from other connections (outq.go)
	subs    *clientSubs // channels and patterns; nil before the first SUBSCRIBE
	trackOn bool        // CLIENT TRACKING is on (the owner's copy of trk.on)
	caching byte        // CLIENT CACHING: 0, 'y' or 'n', for the next command
	trk     trackState  // guarded by Server.track.mu
	gone    atomic.Bool // the connection has ended (a REDIRECT target checks it)
	nsub    atomic.Int32
	npsub   atomic.Int32

	// Blocking commands (blocking.go). blocked is the connection's own;
	// bwake and unblockReq are set by other connections to wake it,
	// isBlocked is read by CLIENT LIST and CLIENT UNBLOCK.
	blocked    *blockState
	bwake      atomic.Bool
	unblockReq atomic.Int32
	isBlocked  atomic.Bool

	// Shared with CLIENT LIST / INFO on other connections.
	mu      sync.Mutex // guards name, libName, libVer
	name    string
	libName string
	libVer  string
	dbAtom  atomic.Int32
	proto   atomic.Int32 // 2 or 3
	lastCmd atomic.Pointer[Command]
	sockFD  int          // the socket's descriptor (-1: none), for CLIENT LIST
	active  atomic.Int64 // server time of the last command (CLIENT LIST idle), to the millisecond
	qbuf    atomic.Int64 // unprocessed input bytes after the last batch
	rbs     atomic.Int64 // size of the input buffer
	queued  atomic.Int32 // commands queued in MULTI; -1 outside MULTI
	monitor atomic.Bool  // the connection ran MONITOR (monitor.go); monitoring is the owner's copy

	replyMode  uint8  // CLIENT REPLY (clientreply.go); the connection's own
	monitoring bool   // MONITOR (monitor.go): keyspace commands are refused
	monitorBuf []byte // where feedMonitors formats this client's lines (monitor.go)

	// What this goroutine last stored in the shared fields above: an atomic
	// store costs a locked instruction, so it is made only on a change.
	seen struct {
		active, qbuf, rbs int64
		cmd               *Command
	}
}

// touch records that the client ran a command at now (CLIENT LIST idle).
func (c *client) touch(now int64) {
	if now-c.seen.active >= 1e6 {
		c.seen.active = now
		c.active.Store(now)
	}
}

// setLastCmd records the last command looked up (CLIENT LIST cmd).
func (c *client) setLastCmd(cmd *Command) {
	if cmd != c.seen.cmd {
		c.seen.cmd = cmd
		c.lastCmd.Store(cmd)
	}
}

func newClient(s *Server, nc net.Conn) *client {
	c := &client{
		s:       s,
		id:      s.nextID.Add(1),
		conn:    nc,
		rd:      resp.NewReader(s.cfg.Limits),
		created: s.clock.Now(),
		addr:    nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
		fd:      -1,
		logFrom: -1,
	}
	c.authed = s.defaultAuthed()
	c.user.Store(s.acl.def)
	c.out.mem, c.out.id = &s.clientMem, c.id
	c.noteBuffers()
	c.setProto(2)
	c.active.Store(c.created)
	c.queued.Store(-1)
	c.sockFD = socketFD(nc)
	return c
}

// serveConn reads requests, runs them and writes the replies. Replies to a
// batch of pipelined requests go out in one write, when the input buffer
// holds no further complete request (or the pending output grows large).
func (s *Server) serveConn(c *client) {
	defer func() {
		c.gone.Store(true)
		c.out.close()
		c.dropBuffers()
		c.unwatchAll()
		c.unsubscribeAll()
		c.leaveBlocked()
		c.resetForward()
		s.track.disable(c)
		if c.monitor.Load() {
			s.ops.monitors.remove(c)
		}
		if c.killed.Load() {
			closeConn(c.conn) // a TLS peer that does not read would delay it (accept.go)
		} else {
			c.conn.Close()
		}
		s.removeClient(c)
	}()
	// The raw socket loop where the platform has one (conn_raw_linux.go),
	// unless the config asks for the portable loop; else, and for
	// connections without a descriptor, the portable loop.
	var served bool
	var err error
	if !s.cfg.portableConnLoop {
		served, err = c.serveRawConn()
	}
	if !served {
		err = c.serveStream()
	}
	if errors.Is(err, resp.ErrQueryBufLimit) {
		s.stats.queryLimitDisconns.Add(1)
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !c.killed.Load() {
		s.log.Debug("closing client", "client", c.addr, "err", err)
	}
}

// serveStream is the portable connection loop, over net.Conn Read and
// Write: for every connection on platforms without the raw socket loop, and
// for connections that have no file descriptor (net.Pipe in tests). It
// returns why the connection ends (nil after QUIT or a protocol error).
func (c *client) serveStream() error {
	for c.process() {
		if c.killed.Load() {
			return net.ErrClosed
		}
		if err := c.rd.Fill(c.conn); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && !c.killed.Load() {
				// A wake-up: another connection queued output (outq.go).
				if !c.woken() {
					return net.ErrClosed
				}
				continue
			}
			return err
		}
	}
	return nil
}

// process runs every complete request in the input buffer, then writes the
// replies (once the log holds what they acknowledge). false means the
// connection is to be closed: QUIT, a protocol error, a failed write.
func (c *client) process() bool {
	s := c.s
	ran := false // a command ran, and touched the client (idle.go)
	for !c.quit {
		if c.blocked != nil {
			before := c.w.Len()
			if !c.serveBlocked() {
				break // still blocked: the requests after it wait (blocking.go)
			}
			c.noteReply(before)
		}
		args, ok, err := c.rd.Next(!c.authed)
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				c.w.Error("ERR " + pe.Error())
				s.log.Debug("protocol error", "client", c.addr, "err", pe.Msg)
			}
			c.quit = true
			break
		}
		if !ok {
			break
		}
		if len(args) > 0 {
			if c.authed {
				c.prefetchAhead()
			}
			before := c.w.Len()
			s.handle(c, args)
			if c.replyMode != replyOn {
				c.applyReplyMode(before)
			}
			c.noteReply(before)
			ran = true
		}
		if c.w.Len() >= maxPendingReply {
			c.releaseScriptLock()
			if !c.syncLog() || !c.flush() {
				return false
			}
		}
	}
	if q := int64(c.rd.Buffered()); q != c.seen.qbuf {
		c.seen.qbuf = q
		c.qbuf.Store(q)
	}
	if c.rd.Size() > 4*resp.InitialReadBuf {
		c.rd.Shrink() // a large request is done: do not keep its buffer while idle
	}
	if r := int64(c.rd.Size()); r != c.seen.rbs {
		c.seen.rbs = r
		c.rbs.Store(r)
	}
	c.releaseScriptLock()
	if c.fwd != nil {
		c.drainForwards() // before the replies are written: theirs come in order
	}
	if c.w.Len() > 0 {
		// Let the other connections whose input is ready run their
		// requests before this one writes its replies, as Redis writes
		// replies once per event-loop turn: a write to a peer that is
		// waiting for it wakes the peer, and in a VM that wake-up (an
		// inter-processor interrupt) cost a loaded server about a fifth
		// of its CPU. The replies of one turn now go out together, and
		// most writes find their peer awake (bench/rl.sh: 1.12 -> 0.88
		// us of server CPU per CL.THROTTLE). Alone, the yield costs a
		// trip through the scheduler; no lock is held here.
		runtime.Gosched()
	}
	if !c.syncLog() || !c.flush() || c.quit {
		return false
	}
	if !ran {
		c.touch(s.clock.Now()) // input read, but no command yet: not idle (idle.go)
	}
	c.noteBuffers()
	if c.blocked != nil {
		c.armBlocked()
	}
	return true
}

// setMulti opens (m non-nil) or closes the client's MULTI block.
func (c *client) setMulti(m *multiState) {
	c.multi = m
	if m == nil {
		c.queued.Store(-1)
	} else {
		c.queued.Store(int32(len(m.cmds)))
	}
}

// socketFD returns nc's file descriptor, or -1 when it has none.
func socketFD(nc net.Conn) int {
	fd := -1
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			rc.Control(func(f uintptr) { fd = int(f) })
		}
	}
	return fd
}

// kill ends the connection from another goroutine: the connection's loop
// sees the flag before its next read, and the expired deadline wakes it
// from a wait for input or for room to write. The loop closes the socket
// itself. kill does not block.
func (c *client) kill() {
	c.killed.Store(true)
	c.conn.SetDeadline(time.Unix(1, 0))
	if up := c.fwdConn.Load(); up != nil { // a read from the leader (forward.go)
		(*up).SetDeadline(time.Unix(1, 0))
	}
}

// lookupCommand is s.table.Lookup, remembering the last name.
func (c *client) lookupCommand(name []byte) *Command {
	if c.lastLookup != nil && bytes.Equal(name, c.lastName) {
		return c.lastLookup
	}
	cmd := c.s.table.Lookup(name)
	if cmd != nil && len(name) <= 32 {
		c.lastName = append(c.lastName[:0], name...)
		c.lastLookup = cmd
	}
	return cmd
}

// prefetchAhead starts loading, from memory into the CPU cache, the table
// data that the next pipelined requests will need (shards/prefetch.go), in
// three stages a request apart: the slot of the request three ahead, the
// record (and a collection's value header) of the one two ahead, whose
// slot was prefetched a request ago, and a collection's packed data for the
// next one. The key's hash and the stage reached are kept with the parsed
// request. A request's key is guessed as its first argument, which it is
// for almost every keyed command; a wrong guess costs a cache line and
// nothing else.
func (c *client) prefetchAhead() {
	n := c.rd.Lookahead(3)
	if n == 0 {
		return
	}
	db := c.s.dbs[c.db]
	hashOf := func(j int) (uint64, bool) {
		if h, ok := c.rd.AheadHint(j); ok {
			return h, true
		}
		key := c.rd.AheadArg(j, c.aheadKeyArg(j))
		if key == nil {
			return 0, false
		}
		h := db.Hash(key)
		c.rd.SetAheadHint(j, h)
		return h, true
	}
	if n == 3 && !c.prefetchDerived(2, stageDerivedSlot) {
		if h, ok := hashOf(2); ok {
			db.PrefetchSlot(h)
		}
	}
	if n >= 2 && !c.prefetchDerived(1, stageDerived) {
		if h, ok := hashOf(1); ok {
			stage := stageRecord
			if db.PrefetchRecord(h) {
				stage = stageObject
			}
			c.rd.SetAheadStage(1, stage)
		}
	}
	switch c.rd.AheadStage(0) {
	case stageRecord, stageDerived:
	case stageDerivedSlot: // its slots were warmed, not yet its records
		c.prefetchDerived(0, stageDerived)
	case stageObject:
		h, _ := c.rd.AheadHint(0)
		db.PrefetchValue(h)
	default: // not seen a request ago: its record now
		if c.prefetchDerived(0, stageDerived) {
			break
		}
		if h, ok := hashOf(0); ok {
			db.PrefetchRecord(h)
		}
	}
}

// aheadKeyArg is the argument of request j (of the lookahead) whose key
// prefetchAhead warms: the first, but the first key of a script (EVAL,
// EVALSHA and their _RO forms: after the script and numkeys). Only names
// starting with 'e' are looked up, so the common path costs one compare.
func (c *client) aheadKeyArg(j int) int {
	if name := c.rd.AheadArg(j, 0); len(name) > 0 && name[0]|0x20 == 'e' {
		if cmd := c.lookupCommand(name); cmd != nil && cmd.Has(command.Scripting) {
			return 3
		}
	}
	return 1
}

// Stages of a request's prefetching (resp.Reader.SetAheadStage).
const (
	stageRecord  uint8 = 1 // its record is on its way
	stageObject  uint8 = 2 // likewise, and it is a collection: its data next
	stageDerived uint8 = 3 // the records of the keys its command derives are on their way
	// the slots of the keys its command derives are on their way, their
	// hashes in client.ahead.hashes
	stageDerivedSlot uint8 = 4
)

// prefetchDerived warms the keys of request j of the lookahead when its
// command derives them from its arguments (Command.DeriveKeys: RL.CHECK's
// rl:{value}:rule keys, which are not among the arguments the generic
// stages look at): their slots at stage stageDerivedSlot, their records at
// stageDerived. It reports whether the request is such a command. The keys
// are derived and hashed once, at the first stage the request reaches; the
// hashes wait in c.ahead.hashes for the next. The common path costs one
// byte compare: only names starting with 'r' are looked up.
func (c *client) prefetchDerived(j int, stage uint8) bool {
	name := c.rd.AheadArg(j, 0)
	if len(name) == 0 || name[0]|0x20 != 'r' {
		return false
	}
	db := c.s.dbs[c.db]
	a := &c.ahead
	slot := c.rd.AheadSlot(j)
	if stage == stageDerived && c.rd.AheadStage(j) == stageDerivedSlot {
		for _, h := range a.hashes[slot] {
			db.PrefetchRecord(h)
		}
		c.rd.SetAheadStage(j, stageDerived)
		return true
	}
	cmd := c.lookupCommand(name)
	if cmd == nil || cmd.DeriveKeys == nil {
		return false
	}
	a.args = a.args[:0]
	for i := 0; ; i++ {
		arg := c.rd.AheadArg(j, i)
		if arg == nil {
			break
		}
		a.args = append(a.args, arg)
	}
	a.buf, a.keys = cmd.DeriveKeys(a.args, a.buf[:0], a.keys[:0])
	hashes := a.hashes[slot][:0]
	for _, k := range a.keys {
		h := db.Hash(k)
		hashes = append(hashes, h)
		if stage == stageDerived {
			db.PrefetchRecord(h)
		} else {
			db.PrefetchSlot(h)
		}
	}
	a.hashes[slot] = hashes
	c.rd.SetAheadStage(j, stage)
	return true
}

// waitFor makes the pending replies wait for durability position pos.
func (c *client) waitFor(pos int64) {
	if pos > c.logUpto {
		c.logUpto = pos
	}
}

// noteReply follows a command whose reply (if any) was appended to c.w
// from offset before: it keeps logFrom and logReplies (see client).
func (c *client) noteReply(before int) {
	if c.logFrom < 0 {
		if c.logUpto <= c.logDone {
			return
		}
		c.logFrom = before
	}
	if c.w.Len() > before {
		c.logReplies++
	}
}

// syncLog waits until the log holds what the pending replies depend on:
// everything their commands wrote and everything they read. If the log
// cannot be written, no client is told of a write that was not logged, nor
// shown data that was not: the replies from the first that depends on the
// unwritten log on are replaced by as many MISCONF errors (misconfReplies),
// writes are refused from then on (dispatch.go), and the connection goes
// on. On a cluster node, syncRepl waits instead. While a shutdown writes
// its final snapshot, the replies wait for its outcome first
// (shutdown.go). false only if the connection is to end.
func (c *client) syncLog() bool {
	if h := c.s.persist.hold.Load(); h != nil && !h.wait() {
		return false // the server closed after its final snapshot (shutdown.go)
	}
	if c.s.repl != nil { // a cluster node: replwait.go
		if c.replWait {
			c.syncRepl()
		}
		return true
	}
	if c.logUpto <= c.logDone {
		return true
	}
	runtime.Gosched() // let other connections append first: one write covers more
	d := c.s.durability()
	if d == nil { // appendonly was switched off: the log was flushed and closed
		c.logDone = c.logUpto
		return true
	}
	if err := d.Wait(c.logUpto); err != nil {
		msg := err.Error()
		c.s.persist.aofWriteErr.Store(&msg)
		c.s.log.Error("append-only log write failed; writes are refused until it can be written",
			"client", c.addr, "err", err)
		c.misconfReplies(msg)
		return true
	}
	c.logDone = c.logUpto
	return true
}

// misconfReplies replaces the pending replies that depend on the log
// (from logFrom on) by one MISCONF error each. They then depend on nothing.
func (c *client) misconfReplies(msg string) {
	from := min(max(c.logFrom, 0), c.w.Len())
	c.w.Truncate(from)
	for range c.logReplies {
		c.w.Error(aofMisconf(msg))
		countError(c.s, aofMisconf(msg))
	}
	c.logFrom, c.logReplies = -1, 0
	c.logUpto = c.logDone
}

// flush writes pending replies, then the output other connections queued
// for this one (outq.go); false means the connection is gone.
func (c *client) flush() bool {
	if c.w.Len() > 0 {
		c.noteBuffers() // a large reply counts while it waits to be written
		ok := c.writeLimited(c.w.Bytes(), c.replyClass())
		if c.w.Len() >= maxPendingReply {
			c.touch(c.s.clock.Now()) // a long write is not idleness (idle.go)
		}
		c.w.Reset(4 * maxPendingReply) // do not keep a huge reply buffer around
		if !ok {
			return false
		}
	}
	c.logFrom, c.logReplies = -1, 0
	if c.out.has.Load() {
		return c.flushOut()
	}
	return true
}

// setProto switches the reply protocol (2 or 3).
func (c *client) setProto(v int) {
	c.w.SetRESP3(v == 3)
	c.proto.Store(int32(v))
}

// setDB selects database i.
func (c *client) setDB(i int) {
	c.db = i
	c.dbAtom.Store(int32(i))
}

// info formats the client as one CLIENT LIST / CLIENT INFO line.
func (c *client) info(now int64) string {
	c.mu.Lock()
	name, lib, ver := c.name, c.libName, c.libVer
	c.mu.Unlock()
	cmd := "NULL"
	if lc := c.lastCmd.Load(); lc != nil {
		cmd = lc.FullName()
	}
	nsub, npsub := c.nsub.Load(), c.npsub.Load()
	flags := ""
	if nsub+npsub > 0 {
		flags += "P"
	}
	if c.queued.Load() >= 0 {
		flags += "x"
	}
	if c.isBlocked.Load() {
		flags += "b"
	}
	if c.monitor.Load() {
		flags += "O"
	}
	redir := c.s.track.info(c, &flags)
	if flags == "" {
		flags = "N"
	}
	rbs, qbuf := c.rbs.Load(), c.qbuf.Load()
	var b bytes.Buffer
	b.WriteString("id=" + strconv.FormatInt(c.id, 10))
	b.WriteString(" addr=" + c.addr + " laddr=" + c.laddr)
	b.WriteString(" fd=" + strconv.Itoa(c.sockFD) + " name=" + name)
	b.WriteString(" age=" + strconv.FormatInt((now-c.created)/1e9, 10))
	b.WriteString(" idle=" + strconv.FormatInt(max(0, now-c.active.Load())/1e9, 10))
	b.WriteString(" flags=" + flags + " db=" + strconv.Itoa(int(c.dbAtom.Load())))
	b.WriteString(" sub=" + strconv.Itoa(int(nsub)) + " psub=" + strconv.Itoa(int(npsub)))
	b.WriteString(" ssub=0 multi=" + strconv.Itoa(int(c.queued.Load())))
	b.WriteString(" qbuf=" + strconv.FormatInt(qbuf, 10) + " qbuf-free=" + strconv.FormatInt(max(0, rbs-qbuf), 10))
	// Output and argument memory are not tracked: reported as 0.
	b.WriteString(" argv-mem=0 multi-mem=0 rbs=" + strconv.FormatInt(rbs, 10))
	b.WriteString(" rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r")
	b.WriteString(" cmd=" + cmd + " user=" + c.userName() + " redir=" + strconv.FormatInt(redir, 10) + " resp=")
	b.WriteString(strconv.Itoa(int(c.proto.Load())))
	b.WriteString(" lib-name=" + lib + " lib-ver=" + ver)
	return b.String()
}

// watchedKey is one key under WATCH.
type watchedKey struct {
	db  int
	key string
}

// watchState holds a client's WATCHed keys.
type watchState struct {
	w   shards.Watch
	set map[watchedKey]int64 // each key's expiry when watched (0: none or missing)
}

// unwatchAll forgets every watched key, locking each key's shard in turn.
// Requires that the client holds no shard lock.
func (c *client) unwatchAll() {
	if c.watch == nil {
		return
	}
	for k := range c.watch.set {
		db := c.s.dbs[k.db]
		kb := []byte(k.key)
		i := db.ShardOf(kb)
		db.Lock(i)
		db.Unwatch(kb, &c.watch.w)
		db.Unlock(i)
	}
	c.watch = nil
}
