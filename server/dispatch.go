package server

import (
	"strings"

	"github.com/turnstile/turnstile/command"
)

// Error replies common to many commands (Redis's exact texts).
const (
	errSyntax     = "ERR syntax error"
	errNotInt     = "ERR value is not an integer or out of range"
	errNotFloat   = "ERR value is not a valid float"
	errWrongType  = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoAuth     = "NOAUTH Authentication required."
	errOverflow   = "ERR increment or decrement would overflow"
	errWrongPass  = "WRONGPASS invalid username-password pair or user is disabled."
	errDBRange    = "ERR DB index is out of range"
	errExecAbort  = "EXECABORT Transaction discarded because of previous errors."
	errInternal   = "ERR internal error"
	errNoSuchKey  = "ERR no such key"
	errInvalidExp = "ERR invalid expire time in '%s' command"
)

func arityError(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// unknownCommandError formats Redis's unknown command reply: the name cut
// at 128 bytes, then quoted arguments until that list reaches 128 bytes.
func unknownCommandError(args [][]byte) string {
	var list strings.Builder
	for _, a := range args[1:] {
		if list.Len() >= 128 {
			break
		}
		room := 128 - list.Len()
		list.WriteString("'")
		list.WriteString(truncate(a, room))
		list.WriteString("' ")
	}
	return "ERR unknown command '" + truncate(args[0], 128) + "', with args beginning with: " + list.String()
}

// truncate quotes an argument in an error text as Redis's "%.*s" does:
// up to its first NUL byte, at most n bytes.
func truncate(b []byte, n int) string {
	b = cstr(b)
	if n < 0 {
		n = 0
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// handle runs one request: lookup, forwarding to the cluster's leader,
// checks, MULTI queueing, then the call.
// The checks come in Redis's order: existence (command, then subcommand),
// arity, authentication. Inside MULTI a rejected command makes EXEC fail.
func (s *Server) handle(c *client, args [][]byte) {
	c.memFull = false
	cmd := c.lookupCommand(args[0])
	if s.repl != nil && c.forwarded(cmd, args) {
		return // the leader runs it (forward.go)
	}
	errText := ""
	switch {
	case cmd == nil:
		errText = unknownCommandError(args)
	case !cmd.CheckArity(len(args)):
		errText = arityError(cmd.Name)
	default:
		if len(cmd.Subs) > 0 {
			cmd, errText = resolveSubcommand(cmd, args)
		}
		c.setLastCmd(cmd) // as Redis: the last command looked up, even if queued or refused
		switch {
		case errText != "":
		case !c.authed && !cmd.Has(command.NoAuth):
			errText = errNoAuth
		case !c.userOrDefault().get().open && s.aclRefused(c, cmd, args, &errText):
		case s.persist.loading.Load() && !cmd.Has(command.Loading):
			errText = errLoading
		case s.scripts.busy.Load() && !cmd.Has(command.AllowBusy):
			errText = errBusy
		case s.mem.max.Load() > 0 && s.refuseForMemory(c, cmd, &errText):
		case s.diskFailing() && deniedOnDiskError(c, cmd):
			errText = s.diskError()
		case c.monitoring && touchesKeyspace(cmd): // monitor.go
			errText = errMonitorKeyspace
		case c.subs != nil && c.proto.Load() == 2 && c.subscribed() && !pubsubAllowed(cmd):
			errText = errPubsubContext(cmd)
		case c.multi != nil && !cmd.Has(command.NoQueue):
			errText = c.multi.checkRoom(s, args)
		}
	}
	if c.caching != 0 {
		defer c.endCaching(cmd)
	}
	if errText != "" {
		c.touch(s.clock.Now())
		switch {
		case cmd != nil && cmd.Name == "exec":
			// As Redis, inside MULTI or not: a refused EXEC discards the
			// transaction (if any) and the watches.
			c.setMulti(nil)
			c.unwatchAll()
			errText = "EXECABORT Transaction discarded because of: " + strings.TrimPrefix(errText, "ERR ")
		case c.multi != nil:
			c.multi.dirty = true
		}
		s.stats.reject(cmd)
		countError(s, errText)
		c.w.Error(errText)
		return
	}
	if s.ops.pause.Load() != nil && !s.waitPause(c, cmd) { // CLIENT PAUSE (pause.go)
		return
	}
	if c.multi != nil && !cmd.Has(command.NoQueue) {
		c.multi.queue(cmd, args)
		c.queued.Store(int32(len(c.multi.cmds)))
		c.touch(s.clock.Now())
		c.w.Status("QUEUED")
		return
	}
	s.call(c, cmd, args)
}

// aclRefused checks a restricted user's permission for cmd (queued in
// MULTI: checked when queued, as in Redis) and sets the NOPERM reply.
func (s *Server) aclRefused(c *client, cmd *Command, args [][]byte, errText *string) bool {
	ctx := "toplevel"
	if c.multi != nil {
		ctx = "multi"
	}
	reason := s.aclDenied(c, c.userOrDefault().get(), cmd, args, ctx)
	if reason == aclOK {
		return false
	}
	*errText = noPermError(reason, cmd)
	return true
}

// resolveSubcommand returns the row that runs args: cmd itself, or its
// subcommand args[1] when cmd is a container. The error is Redis's reply
// for an unknown subcommand or one with the wrong number of arguments.
func resolveSubcommand(cmd *Command, args [][]byte) (*Command, string) {
	if len(cmd.Subs) == 0 || len(args) < 2 {
		return cmd, ""
	}
	sub := cmd.Sub(args[1])
	switch {
	case sub == nil:
		return cmd, "ERR unknown subcommand '" + truncate(args[1], 128) + "'. Try " + strings.ToUpper(cmd.Name) + " HELP."
	case !sub.CheckArity(len(args)):
		return cmd, arityError(sub.FullName())
	}
	return sub, ""
}
