package server

import (
	"github.com/turnstile/turnstile/command"
)

func persistCommands() []*Command {
	const admin = command.Admin | command.NoScript
	return []*Command{
		{Name: "save", Arity: 1, Flags: admin, Group: "server", Since: "1.0.0",
			Summary: "Synchronously saves the database(s) to disk.", Handler: cmdSave},
		{Name: "bgsave", Arity: -1, Flags: admin, Group: "server", Since: "1.0.0",
			Summary: "Asynchronously saves the database(s) to disk.", Handler: cmdBgsave},
		{Name: "lastsave", Arity: 1, Flags: command.Loading | command.Stale | command.Fast | command.Random, Cats: command.CatAdmin | command.CatDangerous, Group: "server", Since: "1.0.0",
			Summary: "Returns the Unix timestamp of the last successful save to disk.", Handler: cmdLastSave},
		{Name: "bgrewriteaof", Arity: 1, Flags: admin, Group: "server", Since: "1.0.0",
			Summary: "Asynchronously rewrites the append-only file to disk.", Handler: cmdBgRewriteAOF},
		{Name: "shutdown", Docs: "[save-selector=(NOSAVE|SAVE)] [NOW]@7.0.0 [FORCE]@7.0.0 [ABORT]@7.0.0", Arity: -1, Flags: admin | command.Loading | command.Stale | command.NoQueue | command.AllowBusy, Group: "server", Since: "1.0.0",
			Summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.", Handler: cmdShutdown},
	}
}

func cmdSave(x *Ctx) {
	if x.s.persist.bgsaveRunning.Load() {
		x.w.Error("ERR Background save already in progress")
		return
	}
	if x.ex.kind == execMulti {
		// The dump locks every shard, and the EXEC holds some: the save
		// runs when the EXEC has released them (cmdExec), and its reply
		// replaces this one if it fails. The snapshot then holds the whole
		// transaction's writes.
		x.c.execSaves = append(x.c.execSaves, x.w.Len())
		x.w.OK()
		return
	}
	x.s.persist.saves.Add(1)
	if err := x.s.save(false); err != nil {
		x.w.Error("ERR " + err.Error())
		return
	}
	x.w.OK()
}

func cmdBgsave(x *Ctx) {
	if len(x.args) > 2 || (len(x.args) == 2 && !isKeyword(x.args[1], "schedule")) {
		x.w.Error(errSyntax)
		return
	}
	if !x.s.bgsave() {
		x.w.Error("ERR Background save already in progress")
		return
	}
	x.w.Status("Background saving started")
}

func cmdLastSave(x *Ctx) { x.w.Int(x.s.persist.lastSave.Load()) }

func cmdBgRewriteAOF(x *Ctx) {
	if x.s.aofLog() == nil {
		x.w.Error("ERR Turnstile rewrites the append-only file only when appendonly is yes")
		return
	}
	if !x.s.bgrewrite() {
		x.w.Error("ERR Background append only file rewriting already in progress")
		return
	}
	x.w.Status("Background append only file rewriting started")
}

// cmdShutdown implements SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] (Shutdown):
// save if asked (or if save rules exist), then stop the server. On success
// the client gets no reply: the connection closes, as with Redis. If the
// final snapshot fails (and FORCE is not given), the server keeps serving
// and the client gets Redis's error. NOW only skips waiting for replicas
// in Redis, which Turnstile has none of.
func cmdShutdown(x *Ctx) {
	var opts ShutdownOptions
	for _, a := range x.args[1:] {
		switch keyword(a) {
		case "save":
			opts.Save = true
		case "nosave":
			opts.NoSave = true
		case "force":
			opts.Force = true
		case "now":
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	if opts.Save && opts.NoSave {
		x.w.Error(errSyntax)
		return
	}
	if x.s.scripts.busy.Load() && !opts.NoSave { // only SHUTDOWN NOSAVE stops a busy script
		x.w.Error(errBusy)
		return
	}
	x.s.log.Info("shutdown requested by a client", "client", x.c.addr)
	if err := x.s.Shutdown(opts); err != nil {
		x.w.Error("ERR Errors trying to SHUTDOWN. Check logs.")
		return
	}
	x.c.quit = true
	x.w.Truncate(0)
}
