package server

import (
	"strings"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/script"
)

func scriptingCommands() []*Command {
	const g = "scripting"
	f := command.NoScript | command.Stale | command.Scripting
	ro := f | command.Readonly
	const args = "<script> <numkeys> [key ...] [arg ...]"
	const shaArgs = "<sha1> <numkeys> [key ...] [arg ...]"
	return []*Command{
		{Name: "eval", Docs: "script:string numkeys:integer [key:key...] [arg:string...]", Arity: -3, Flags: f, Locks: scriptKeys, Args: args, Group: g, Since: "2.6.0",
			Summary: "Executes a server-side Lua script.", Handler: cmdEval},
		{Name: "evalsha", Docs: "sha1:string numkeys:integer [key:key...] [arg:string...]", Arity: -3, Flags: f, Locks: scriptKeys, Args: shaArgs, Group: g, Since: "2.6.0",
			Summary: "Executes a server-side Lua script by SHA1 digest.", Handler: cmdEval},
		{Name: "eval_ro", Docs: "script:string numkeys:integer [key:key...] [arg:string...]", Arity: -3, Flags: ro, Locks: scriptKeys, Args: args, Group: g, Since: "7.0.0",
			Summary: "Executes a read-only server-side Lua script.", Handler: cmdEval},
		{Name: "evalsha_ro", Docs: "sha1:string numkeys:integer [key:key...] [arg:string...]", Arity: -3, Flags: ro, Locks: scriptKeys, Args: shaArgs, Group: g, Since: "7.0.0",
			Summary: "Executes a read-only server-side Lua script by SHA1 digest.", Handler: cmdEval},
		{Name: "script", Arity: -2, Group: g, Since: "2.6.0",
			Summary: "A container for Lua scripts management commands.", Subs: []*Command{
				{Name: "load", Docs: "script:string", Arity: 3, Flags: command.NoScript | command.Stale | command.Scripting, Args: "<script>", Since: "2.6.0",
					Summary: "Loads a server-side Lua script to the script cache.", Handler: cmdScriptLoad},
				{Name: "exists", Docs: "sha1:string...", Arity: -3, Flags: command.NoScript | command.Scripting, Args: "<sha1> [sha1 ...]", Since: "2.6.0",
					Summary: "Determines whether server-side Lua scripts exist in the script cache.", Handler: cmdScriptExists},
				{Name: "flush", Docs: "async=[ASYNC|SYNC]@6.2.0", Arity: -2, Flags: command.NoScript | command.Scripting, Args: "[ASYNC|SYNC]", Since: "2.6.0",
					Summary: "Removes all server-side Lua scripts from the script cache.", Handler: cmdScriptFlush},
				{Name: "kill", Arity: 2, Flags: command.NoScript | command.AllowBusy | command.Leader, Since: "2.6.0",
					Summary: "Terminates a server-side Lua script during execution.", Handler: cmdScriptKill},
				{Name: "help", Arity: 2, Flags: command.Loading | command.Stale, Since: "5.0.0",
					Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp},
			}},
	}
}

// lowerSHA returns sha in lower case (digests are case-insensitive): sha
// itself when it has no upper-case letter (as clients send it), else
// appended to dst in lower case.
func lowerSHA(dst, sha []byte) []byte {
	for i, c := range sha {
		if 'A' <= c && c <= 'Z' {
			dst = append(dst, sha[:i]...)
			for _, c := range sha[i:] {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				dst = append(dst, c)
			}
			return dst
		}
	}
	return sha
}

// scriptKeys names the keys a script declares (numkeys, then the keys):
// the lock set of an EVAL queued in MULTI, and the keys the cluster routes
// by. numkeys is read as numKeysArg does; a negative or too large one
// names none (the command then fails).
func scriptKeys(args [][]byte, db, _ int, add func(db int, key []byte)) {
	if len(args) < 3 {
		return
	}
	n := numKeysArg(args[2])
	if n < 0 || n > int64(len(args)-3) {
		return
	}
	for _, k := range args[3 : 3+n] {
		add(db, k)
	}
}

// cmdEval runs EVAL, EVALSHA, EVAL_RO and EVALSHA_RO. Outside MULTI the
// dispatcher has locked nothing (command.Scripting): the script lock comes
// first, then the declared keys' shards, in the command's own execution;
// inside an EXEC, which took the script lock and the declared keys before
// its queue ran, the script runs in the EXEC's execution.
func cmdEval(x *Ctx) {
	s, ex := x.s, x.ex
	sc := &s.scripts
	bySHA := strings.HasPrefix(x.cmd.Name, "evalsha")
	var shaBuf [40]byte
	var sha []byte // EVAL's digest (EVALSHA's is lower-cased where needed)
	var nat *script.Native
	if bySHA {
		nat = sc.nativeBySHA(x.c, x.args[1])
	} else {
		sha = script.AppendSHA1Hex(shaBuf[:0], x.args[1])
		nat = sc.native(sha)
	}
	if x.cmd.Has(command.Readonly) {
		nat = nil // EVAL_RO, EVALSHA_RO: the Lua text, which refuses the script's writes
	}
	if ex.kind == execCommand && nat == nil {
		x.c.acquireScriptLock()
	}
	// Redis looks the script up before numkeys (a native's, without a lock).
	if bySHA && !(nat != nil && sc.engine.NativeCached(nat)) && !sc.engine.Exists(lowerSHA(shaBuf[:0], x.args[1])) {
		x.w.Error(script.ErrNoScript)
		return
	}
	n, ok := resp.ParseInt(x.args[2])
	switch {
	case !ok:
		x.w.Error(errNotInt)
		return
	case n < 0:
		x.w.Error("ERR Number of keys can't be negative")
		return
	case n > int64(len(x.args)-3):
		x.w.Error("ERR Number of keys can't be greater than number of args")
		return
	}
	keys, args := x.args[3:3+n], x.args[3+n:]
	if nat != nil && !nat.Check(keys, args) {
		nat = nil // the Lua text runs: it takes the script lock like any script
		if ex.kind == execCommand {
			x.c.acquireScriptLock()
		}
	}
	if nat != nil && !bySHA && !sc.engine.Exists(sha) { // EVAL caches the script
		if ex.kind == execCommand { // (an EXEC with a script holds the script lock already)
			x.c.acquireScriptLock()
		}
		err := sc.engine.Cache(x.args[1])
		if ex.kind == execCommand {
			x.c.releaseScriptLock()
		}
		if err != nil {
			x.w.Error(err.Error())
			return
		}
	}
	if ex.kind == execCommand { // the declared keys
		s.addKeyLocks(&ex.locks, x.c.db, keys)
		ex.locks.lock(s)
	}
	if nat != nil {
		s.runNative(x, nat, keys, args)
		return
	}
	h := &sc.host
	req := &h.req
	*req = script.Request{Keys: keys, Args: args, Host: h, W: x.w,
		ReadOnly: x.cmd.Has(command.Readonly)}
	if bySHA {
		req.SHA = x.args[1]
	} else {
		req.Body = x.args[1]
	}
	h.caller, h.ex = x.c, ex
	h.fake.db = x.c.db
	sc.engine.Run(req)
	sc.luaRuns.Add(1)
	h.caller, h.ex = nil, nil
	*req = script.Request{}
	if sc.busy.Load() {
		sc.busy.Store(false)
	}
	if sc.shutdown.Load() { // stopped by SHUTDOWN NOSAVE: nothing of it is kept
		clear(ex.effects)
		ex.effects = ex.effects[:0]
	}
}

// lockScripts makes sure the script lock is held for SCRIPT LOAD, EXISTS
// and FLUSH (flagged command.Scripting, so that an EXEC queueing them
// takes it before its shards, like one queueing EVAL): outside MULTI the
// connection takes it (or holds it from the scripts before in its batch).
func lockScripts(x *Ctx) {
	if x.ex.kind == execCommand {
		x.c.acquireScriptLock()
	}
}

func cmdScriptLoad(x *Ctx) {
	sc := &x.s.scripts
	lockScripts(x)
	sha, err := sc.engine.Load(x.args[2])
	if err != nil {
		x.w.Error(err.Error())
		return
	}
	if x.s.leading.Load() {
		x.s.repl.ShareScript(x.args[2]) // every node learns it (replication.go)
	}
	x.w.BulkString(sha)
}

func cmdScriptExists(x *Ctx) {
	sc := &x.s.scripts
	lockScripts(x)
	x.w.Array(len(x.args) - 2)
	for _, sha := range x.args[2:] {
		if sc.engine.Exists(sha) {
			x.w.Int(1)
		} else {
			x.w.Int(0)
		}
	}
}

func cmdScriptFlush(x *Ctx) {
	if len(x.args) > 3 || len(x.args) == 3 && !isKeyword(x.args[2], "async") && !isKeyword(x.args[2], "sync") {
		x.w.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	lockScripts(x)
	x.s.scripts.engine.Flush()
	x.w.OK()
}

func cmdScriptKill(x *Ctx) {
	if msg := x.s.scripts.engine.Kill(); msg != "" {
		x.w.Error(msg)
		return
	}
	x.w.OK()
}
