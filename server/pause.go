package server

import (
	"strings"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE. While a pause lasts,
// a client's command that it covers waits (it does not fail) until the
// pause ends or is lifted, then runs: in ALL mode every command of every
// client, CLIENT UNPAUSE included (as Redis: only the timeout ends it then);
// in WRITE mode the commands that write or may replicate (PUBLISH, scripts
// other than their _RO forms) and an EXEC whose queue holds one. A command
// waits after the dispatcher's checks and before being queued or run, in
// its connection's goroutine, holding no lock; replies to the commands
// before it in the same pipeline are sent after it.
//
// The state is one immutable pauseState behind an atomic pointer (nil: no
// pause), replaced as a whole; the dispatcher loads it once per command.

type pauseMode uint8

const (
	pauseWrite pauseMode = iota + 1
	pauseAll
)

type pauseState struct {
	mode  pauseMode
	until int64         // server time (ns) at which it ends
	done  chan struct{} // closed when it is lifted or replaced
}

func clientPause(x *Ctx) {
	ms, ok := resp.ParseInt(x.args[2])
	switch {
	case !ok:
		x.w.Error("ERR timeout is not an integer or out of range")
		return
	case ms < 0:
		x.w.Error("ERR timeout is negative")
		return
	}
	mode := pauseAll
	switch {
	case len(x.args) > 4:
		x.w.Error("ERR unknown subcommand or wrong number of arguments for '" + string(x.args[1]) + "'. Try CLIENT HELP.")
		return
	case len(x.args) == 4 && isKeyword(x.args[3], "write"):
		mode = pauseWrite
	case len(x.args) == 4 && !isKeyword(x.args[3], "all"):
		x.w.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
		return
	}
	until := x.now + min(ms, int64(1<<62)/1e6)*1e6
	p := &x.s.ops.pause
	for {
		old := p.Load()
		next := &pauseState{mode: mode, until: until, done: make(chan struct{})}
		if old != nil && old.until > x.now { // as Redis: the stricter mode, the later end
			next.mode = max(next.mode, old.mode)
			next.until = max(next.until, old.until)
		}
		if p.CompareAndSwap(old, next) {
			if old != nil {
				close(old.done)
			}
			break
		}
	}
	x.w.OK()
}

func clientUnpause(x *Ctx) {
	if old := x.s.ops.pause.Swap(nil); old != nil {
		close(old.done)
	}
	x.w.OK()
}

// pausedNow reports whether a CLIENT PAUSE is in force: active expiry
// waits for its end, as Redis's does, so that the dataset stays still
// (a failover's purpose).
func (s *Server) pausedNow() bool {
	st := s.ops.pause.Load()
	return st != nil && s.clock.Now() < st.until
}

// pauses reports whether st makes c's command cmd wait.
func (st *pauseState) pauses(c *client, cmd *Command) bool {
	if st.mode == pauseAll {
		return true
	}
	if writesOrReplicates(cmd) {
		return true
	}
	if cmd.Name == "exec" && c.multi != nil {
		for _, q := range c.multi.cmds {
			if writesOrReplicates(q.cmd) {
				return true
			}
		}
	}
	return false
}

func writesOrReplicates(cmd *Command) bool {
	return cmd.Has(command.Write) || cmd.Has(command.MayReplicate) ||
		(cmd.Has(command.Scripting) && !strings.HasSuffix(cmd.Name, "_ro") && cmd.Name != "exists")
}

// waitPause makes c's command cmd wait while a pause covers it. false: the
// connection was killed or the server is stopping meanwhile; the command
// is not to run.
func (s *Server) waitPause(c *client, cmd *Command) bool {
	p := &s.ops.pause
	waited := false
	defer func() {
		if waited {
			c.isBlocked.Store(false)
			s.ops.paused.Add(-1)
		}
	}()
	for {
		st := p.Load()
		if st == nil || !st.pauses(c, cmd) {
			return true
		}
		now := s.clock.Now()
		if now >= st.until {
			if p.CompareAndSwap(st, nil) {
				close(st.done)
			}
			return true
		}
		if !waited {
			waited = true
			c.releaseScriptLock()
			c.isBlocked.Store(true) // CLIENT LIST and INFO show it blocked, as Redis
			s.ops.paused.Add(1)
		}
		t := time.NewTimer(min(time.Duration(st.until-now), 100*time.Millisecond))
		select {
		case <-st.done:
		case <-t.C:
		case <-s.stop:
			t.Stop()
			return false
		}
		t.Stop()
		if c.killed.Load() {
			return false
		}
	}
}
