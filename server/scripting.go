package server

import (
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
)

// scripting is the server's side of Lua scripting (package script).
//
// One script runs at a time, as in Redis: mu, the script lock, is held
// from before a script's shard locks are taken until its execution has
// ended (exec.go, execution.scriptLocked: its effects, appended by end,
// may point into the engine's argument arena, reused by the next script).
// That is
// what lets a script reach keys it did not declare: holding mu, it may
// wait for any shard while holding others (lockSet.escalate), because no
// other unit waits for a shard while holding one (lockSet.lock) and no
// other script runs. Commands that are not scripts do not take mu: they
// run beside a script on the shards it does not hold.
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
}

const errBusy = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."

func (s *Server) initScripting() {
	sc := &s.scripts
	sc.engine = script.New(script.Config{Version: Version, VersionNum: versionNum(Version)})
	sc.threshold.Store(s.cfg.BusyReplyThreshold)
	sc.host = scriptHost{s: s, fake: &client{s: s, id: -1, fd: -1, sockFD: -1, authed: true, addr: "lua"}}
	sc.host.fake.proto.Store(2)
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
	cmd    *Command // the row Lookup found, for Call
}

func (h *scriptHost) Lookup(args [][]byte) (int, command.Flag, bool) {
	cmd := h.fake.lookupCommand(args[0])
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
	if cmd.Has(command.Write) {
		if err := s.persist.aofWriteErr.Load(); err != nil {
			w.Error("MISCONF Errors writing to the AOF file: " + *err)
			return
		}
	}
	c := h.fake
	// Lock escalation: the shards of keys the script did not declare.
	if cmd.Has(command.Keyspace) {
		ex.locks.escalateAll(s)
	} else {
		var more lockSet
		var buf [8]lockItem
		more.items = buf[:0]
		s.addCommandLocks(&more, cmd, args, c.db)
		if more.all {
			ex.locks.escalateAll(s)
		}
		for _, it := range more.items {
			ex.locks.escalate(s, it.db, it.shard)
		}
		if more.grow > 0 && !more.roomForAll(s) && !s.roomForNew(ex.now, c.db, []queued{{cmd, args}}) {
			w.Error(errShardFull)
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
}

func (h *scriptHost) Log(level int, msg string) {
	lv := [...]slog.Level{slog.LevelDebug, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn}[level]
	h.s.log.Log(context.Background(), lv, msg, "source", "script")
}
