package server

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/script"
	"github.com/turnstile/turnstile/shards"
)

// scripting is the server's side of Lua scripting (package script).
//
// One script runs at a time, as in Redis: mu, the script lock, is held
// from before a script's shard locks are taken until its execution has
// ended (its effects, appended by end, may point into the engine's
// argument arena, which the next script reuses): a connection holds it
// (acquireScriptLock) until its next command that is not a script, or
// the end of its pipelined batch, both after end.
//
// That is what lets a script reach keys it did not declare: holding mu,
// it may wait for any shard while holding others (lockSet.escalate),
// because no other unit waits for a shard while holding one
// (lockSet.lock) and no other script runs. Commands that are not scripts
// do not take mu: they run beside a script on the shards it does not
// hold. Native scripts (known scripts run in Go) do not take it either:
// they touch only their declared keys, locked before they start.
type scripting struct {
	mu     sync.Mutex // the script lock; guards engine (but Kill/Running) and host
	engine *script.Engine
	host   scriptHost
	// busy is set by the watchdog once the running script has run longer
	// than busy-reply-threshold: other clients then get BUSY.
	busy      atomic.Bool
	threshold atomic.Int64 // busy-reply-threshold, milliseconds
	// shutdown is set by SHUTDOWN NOSAVE while a script is busy: the
	// script is stopped whatever it wrote, and its effects are dropped.
	shutdown atomic.Bool
	// noNative turns the native implementations of known scripts off
	// (turnstile-native-scripts no): every script runs in Lua.
	noNative atomic.Bool
	luaRuns  atomic.Int64
	// nativeRuns counts the runs of each native, by script.Natives order.
	nativeRuns []atomic.Int64
	rows       nativeRows // the rows of the natives' direct calls
}

// native returns the native implementation of the script with this
// lower-case digest, or nil.
func (sc *scripting) native(sha []byte) *script.Native {
	if sc.noNative.Load() {
		return nil
	}
	return script.NativeFor(sha)
}

// nativeBySHA is native for EVALSHA's digest as sent (in any case),
// remembering on c the last digest that named a native: a limiter library
// sends one digest on every request, and comparing 40 bytes costs less
// than folding their case and looking them up.
func (sc *scripting) nativeBySHA(c *client, sha []byte) *script.Native {
	if sc.noNative.Load() {
		return nil
	}
	if c.lastNative != nil && bytes.Equal(sha, c.lastSHA) {
		return c.lastNative
	}
	var buf [40]byte
	nat := script.NativeFor(lowerSHA(buf[:0], sha))
	if nat != nil {
		c.lastSHA = append(c.lastSHA[:0], sha...)
		c.lastNative = nat
	}
	return nat
}

// runNative runs a known script natively in x's execution, which holds
// the declared keys' shards: no interpreter, no script lock.
func (s *Server) runNative(x *Ctx, nat *script.Native, keys, args [][]byte) {
	c := x.c
	if c.native == nil {
		c.native = &nativeHost{s: s, c: c, cmds: make(map[string]*Command), rows: s.scripts.rows}
	}
	h := c.native
	h.newRun(x.ex)
	nat.Run(h, keys, args, x.w)
	s.scripts.nativeRuns[nat.Index()].Add(1)
}

// nativeHost is script.Caller for natives: each command runs in the
// script's execution as the calling client, its reply parsed. It is also
// script.Keyspace (native_keyspace.go): TIME, GET, PTTL, SET ... EX and
// SETEX run directly on the execution's Ctx.
type nativeHost struct {
	s     *Server
	c     *client
	ex    *execution
	ctx   Ctx
	w     resp.Writer
	reply script.Reply
	cmds  map[string]*Command // the rows natives call, by the name they send
	// arena holds formatted number arguments until the execution ends: it
	// grows by new chunks and is reused by the next unit (newRun).
	arena []byte
	more  lockSet // the shards of one call's keys (reused), for noRoom
	rows  nativeRows
	args  [5][]byte // a direct call's command line, for its Ctx and checks
	num   []byte    // a direct GET's integer value, formatted
	// got is where the last direct GET of this run found its key (in
	// database gotDB), for a SET of the same key to store through without
	// a second lookup while the Ref still holds the key (setExpiring).
	got   shards.Ref
	gotDB int
	gotOK bool
}

// newRun prepares the host for a native run in execution ex.
func (h *nativeHost) newRun(ex *execution) {
	if ex.kind == execCommand || h.ex != ex { // the last unit's effects are in the log
		h.arena = h.arena[:0]
	}
	h.ex = ex
	h.gotOK = false
	h.ctx.init(h.s, h.c, nil, nil, ex) // the direct calls' Ctx (retarget)
}

func (h *nativeHost) Number(f float64) []byte {
	if cap(h.arena)-len(h.arena) < 32 {
		h.arena = make([]byte, 0, max(2*cap(h.arena), 512))
	}
	from := len(h.arena)
	h.arena = script.AppendArg(h.arena, f)
	return h.arena[from:len(h.arena):len(h.arena)]
}

// addsKeysError is Server.noRoom for a command a native calls (the
// refusals are the Lua host's: natives answer what their scripts would).
func (h *nativeHost) addsKeysError(cmd *Command, args [][]byte) string {
	if !cmd.Has(command.AddsKeys) {
		return ""
	}
	more := &h.more
	*more = lockSet{items: more.items[:0]}
	h.s.addCommandLocks(more, cmd, args, h.c.db)
	return h.s.noRoom(more, cmd, args, h.c.db, h.ex.now)
}

// nativeReplyKeep is the reply buffer a connection's nativeHost keeps
// between calls; a larger reply's buffer is released.
const nativeReplyKeep = 16 << 10

func (h *nativeHost) Call(args ...[]byte) script.Reply {
	s := h.s
	cmd, ok := h.cmds[string(args[0])]
	if !ok {
		cmd = s.table.Lookup(args[0])
		h.cmds[string(args[0])] = cmd // natives send a fixed set of names
	}
	if cmd != nil && len(cmd.Subs) > 0 && len(args) >= 2 {
		cmd = cmd.Sub(args[1])
	}
	h.w.Reset(nativeReplyKeep)
	if cmd == nil || !cmd.CheckArity(len(args)) { // a native sends what its script sends: a bug
		h.w.Error("ERR " + "native script called an unknown command or with the wrong arity")
	} else if e := s.scriptACLError(h.c, cmd, args); e != "" {
		h.w.Error(e)
	} else if e := s.diskRefusal(cmd); e != "" {
		h.w.Error(e)
	} else if e := s.scriptOOM(cmd, h.ex.wrote); e != "" {
		h.w.Error(e)
	} else if e := h.addsKeysError(cmd, args); e != "" {
		h.w.Error(e)
	} else {
		y := &h.ctx
		y.init(s, h.c, cmd, args, h.ex)
		y.w = &h.w
		failed := s.run(y)
		s.stats.record(cmd, 0, failed)
		if failed {
			h.ex.scriptErrs++ // counted once (run)
		}
		if s.ops.monitors.n.Load() != 0 { // shown as a script's redis.call (monitor.go)
			s.feedMonitors(h.c, cmd, args, true)
		}
	}
	script.ParseReply(h.w.Bytes(), &h.reply)
	return h.reply
}

const errBusy = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."

func (s *Server) initScripting() {
	sc := &s.scripts
	sc.engine = script.New(script.Config{Version: Version, VersionNum: versionNum(Version)})
	sc.threshold.Store(s.cfg.BusyReplyThreshold)
	sc.noNative.Store(!s.cfg.NativeScripts)
	sc.host = scriptHost{s: s, fake: &client{s: s, id: -1, fd: -1, sockFD: -1, authed: true, addr: "lua"},
		cmds: make(map[string]*Command)}
	sc.nativeRuns = make([]atomic.Int64, len(script.Natives()))
	sc.rows = newNativeRows(s.table)
	sc.host.fake.proto.Store(2)
}

// scriptLockRun is how many scripts one connection runs in a row, from one
// pipelined batch, before it lets other connections' scripts in.
const scriptLockRun = 32

// acquireScriptLock makes the connection hold the script lock. A
// connection keeps it across the scripts of one pipelined batch (taking a
// contended mutex for each script costs more than a short script), and
// lets it go (releaseScriptLock) before anything that waits: the end of
// the batch (durability, the socket), any command that is not a script,
// and every scriptLockRun scripts. Holding it while running other commands
// cannot deadlock: nobody waits for it while holding a shard.
func (c *client) acquireScriptLock() {
	if c.scriptLock && c.scriptRun >= scriptLockRun {
		c.releaseScriptLock()
	}
	if !c.scriptLock {
		c.s.scripts.mu.Lock()
		c.scriptLock, c.scriptRun = true, 0
	}
	c.scriptRun++
}

// releaseScriptLock lets the script lock go if the connection holds it.
func (c *client) releaseScriptLock() {
	if c.scriptLock {
		c.scriptLock = false
		c.s.scripts.mu.Unlock()
	}
}

// versionNum packs "7.2.0" as Redis's REDIS_VERSION_NUM (0x070200).
func versionNum(v string) int {
	n := 0
	for i, p := range strings.SplitN(v, ".", 3) {
		d, _ := strconv.Atoi(p)
		n |= d << (16 - 8*i)
	}
	return n
}

// scriptWatchdog marks a script that overruns busy-reply-threshold as
// busy (and logs it once), until the server stops.
func (s *Server) scriptWatchdog() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		since, running := s.scripts.engine.Running()
		limit := time.Duration(s.scripts.threshold.Load()) * time.Millisecond
		if running && time.Since(since) >= limit && !s.scripts.busy.Load() {
			s.scripts.busy.Store(true)
			s.log.Warn("slow script detected: still in execution after the busy-reply-threshold", "threshold_ms", limit.Milliseconds())
		}
	}
}

// scriptHost is script.Host for the running script: commands run in the
// script's execution, as the scripting client (Redis's "lua" client: its
// own selected database, starting at the caller's).
type scriptHost struct {
	s      *Server
	fake   *client
	caller *client
	ex     *execution
	ctx    Ctx
	cmd    *Command       // the row Lookup found, for Call
	more   lockSet        // the shards one call needs (reused)
	req    script.Request // the running script's (reused; held under the script lock)
	// cmds caches rows by the exact name scripts send (bounded: a script
	// may send any bytes as a command name).
	cmds map[string]*Command
}

func (h *scriptHost) Lookup(args [][]byte) (int, command.Flag, bool) {
	cmd, ok := h.cmds[string(args[0])]
	if !ok {
		cmd = h.s.table.Lookup(args[0])
		if len(h.cmds) < 256 {
			h.cmds[string(args[0])] = cmd
		}
	}
	if cmd == nil {
		return 0, 0, false
	}
	if len(cmd.Subs) > 0 && len(args) >= 2 {
		if cmd = cmd.Sub(args[1]); cmd == nil {
			return 0, 0, false
		}
	}
	h.cmd = cmd
	return cmd.Arity, cmd.Flags, true
}

func (h *scriptHost) Call(args [][]byte, w *resp.Writer) {
	s, cmd, ex := h.s, h.cmd, h.ex
	h.cmd = nil
	if cmd == nil { // the engine calls Lookup first, always
		w.Error("ERR Unknown Redis command called from script")
		return
	}
	if e := s.scriptACLError(h.caller, cmd, args); e != "" {
		w.Error(e)
		return
	}
	if e := s.diskRefusal(cmd); e != "" {
		w.Error(e)
		return
	}
	if e := s.scriptOOM(cmd, ex.wrote); e != "" {
		w.Error(e)
		return
	}
	c := h.fake
	// Lock escalation: the shards of keys the script did not declare.
	if cmd.Has(command.Keyspace) {
		ex.locks.escalateAll(s)
	} else {
		more := &h.more
		*more = lockSet{items: more.items[:0]}
		s.addCommandLocks(more, cmd, args, c.db)
		if more.all {
			ex.locks.escalateAll(s)
		}
		for _, it := range more.items {
			ex.locks.escalate(s, it.db, it.shard)
		}
		if e := s.noRoom(more, cmd, args, c.db, ex.now); e != "" {
			w.Error(e)
			return
		}
	}
	if w.RESP3() {
		c.proto.Store(3)
	} else {
		c.proto.Store(2)
	}
	y := &h.ctx
	y.init(s, c, cmd, args, ex)
	y.w = w
	failed := s.run(y)
	s.stats.record(cmd, 0, failed)
	if failed {
		ex.scriptErrs++ // counted once (run)
	}
	if s.ops.monitors.n.Load() != 0 { // monitor.go
		s.feedMonitors(c, cmd, args, true)
	}
	if h.caller.trackOn && cmd.Has(command.Readonly) && !failed {
		// Client-side caching: the caller, not the scripting client,
		// read these keys (as when the script runs natively).
		y.c = h.caller
		s.track.remember(y)
	}
}

// scriptACLError is the error redis.call gets when the script's caller
// may not run cmd with args (logged with context "lua"), or "".
func (s *Server) scriptACLError(caller *client, cmd *Command, args [][]byte) string {
	r := caller.userOrDefault().get()
	if r.open {
		return ""
	}
	if reason := s.aclDenied(caller, r, cmd, args, "lua"); reason != aclOK {
		return scriptNoPermError(reason)
	}
	return ""
}

// diskRefusal is the error a write command a script calls gets while
// persistence is failing (the append-only file cannot be written, or the
// last background save failed: diskFailing), "" otherwise.
func (s *Server) diskRefusal(cmd *Command) string {
	if cmd.Has(command.Write) && s.diskFailing() {
		return s.diskError()
	}
	return ""
}

// noRoom is the error a command a script calls, whose own shards are
// more, gets if it would add a key that does not fit: at the memory limit
// (the eviction before the script did not get under it) or in a full
// shard; "" if it fits.
func (s *Server) noRoom(more *lockSet, cmd *Command, args [][]byte, db int, now int64) string {
	return s.roomError(s.overMemory(), more, now, db, []queued{{cmd, args}})
}

func (h *scriptHost) Log(level int, msg string) {
	lv := [...]slog.Level{slog.LevelDebug, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn}[level]
	h.s.log.Log(context.Background(), lv, msg, "source", "script")
}

// infoScripts is INFO scripts (Turnstile's own section): which path
// scripts take. Each known script is listed with its SHA1, name and how
// many times it ran natively; scripts_lua_runs counts interpreted runs.
func infoScripts(s *Server, b *strings.Builder, _ int64) {
	sc := &s.scripts
	field(b, "scripts_cached", sc.engine.Cached())
	field(b, "scripts_lua_runs", sc.luaRuns.Load())
	field(b, "scripts_native_enabled", map[bool]string{true: "no", false: "yes"}[sc.noNative.Load()])
	for i, n := range script.Natives() {
		field(b, "native_"+n.SHA, "name="+n.Name+",runs="+strconv.FormatInt(sc.nativeRuns[i].Load(), 10))
	}
}
