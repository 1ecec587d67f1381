package server

import (
	"math"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Commands between databases (MOVE, SWAPDB) and WAIT.
//
// MOVE locks its key in both databases (moveLocks). SWAPDB is flagged
// Write|Keyspace, so its execution holds every shard of every database; it
// exchanges the two databases' contents key by key (Ctx.swapDB), which
// keeps the log, WATCH, blocked clients and tracking right with the
// effects every other write uses, at a cost linear in the keys of both
// (Redis swaps two pointers).

func dbCommands() []*Command {
	return []*Command{
		{Name: "move", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key db:integer", Arity: 3, Flags: command.Write | command.Fast | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1, Locks: moveLocks,
			Group: "generic", Since: "1.0.0", Summary: "Moves a key to another database.", Handler: cmdMove},
		{Name: "swapdb", Cats: command.CatKeyspace | command.CatDangerous, Docs: "index1:integer index2:integer", Arity: 3, Flags: command.Write | command.Fast | command.Keyspace,
			Group: "server", Since: "4.0.0", Summary: "Swaps two Redis databases.", Handler: cmdSwapDB},
		{Name: "wait", Cats: command.CatConnection, NotCats: command.CatKeyspace, Docs: "numreplicas:integer timeout:integer", Arity: 3, Flags: command.NoScript,
			Group: "generic", Since: "3.0.0", Summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", Handler: cmdWait},
	}
}

// parseDBIndex parses a database number as Redis's MOVE and COPY do: an
// integer (errNotInt), within int32 (errIntRange), naming a database
// (errDBRange).
func parseDBIndex(x *Ctx, b []byte) (int, bool) {
	n, ok := resp.ParseInt(b)
	switch {
	case !ok:
		x.w.Error(errNotInt)
	case n < math.MinInt32 || n > math.MaxInt32:
		x.w.Error(errIntRange)
	case n < 0 || n >= int64(x.s.numDBs()):
		x.w.Error(errDBRange)
	default:
		return int(n), true
	}
	return 0, false
}

// cmdMove is MOVE key db: 1 when the key moved (with its expiry), 0 when
// it is missing here or present there. Checks in Redis's order.
func cmdMove(x *Ctx) {
	db, ok := parseDBIndex(x, x.args[2])
	if !ok {
		return
	}
	if db == x.c.db {
		x.w.Error(errSameObject)
		return
	}
	key := x.args[1]
	e, ok := x.get(key)
	if !ok {
		x.w.Int(0)
		return
	}
	if _, exists := x.getDB(db, key); exists {
		x.w.Int(0)
		return
	}
	x.putDB(db, key, x.owned(e)) // first: e's bytes live in the source's shard
	x.del(key)
	x.w.Int(1)
}

// moveLocks names MOVE's key in the selected database and, when the
// argument names another database, in that one.
func moveLocks(args [][]byte, db, ndb int, add func(int, []byte)) {
	add(db, args[1])
	if len(args) < 3 {
		return
	}
	if n, ok := resp.ParseInt(args[2]); ok && n >= 0 && n < int64(ndb) && int(n) != db {
		add(int(n), args[1])
	}
}

// cmdSwapDB is SWAPDB index1 index2.
func cmdSwapDB(x *Ctx) {
	var dbs [2]int
	for i, msg := range [2]string{"ERR invalid first DB index", "ERR invalid second DB index"} {
		n, ok := resp.ParseInt(x.args[1+i])
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			x.w.Error(msg)
			return
		}
		if n < 0 || n >= int64(x.s.numDBs()) {
			x.w.Error(errDBRange)
			return
		}
		dbs[i] = int(n)
	}
	x.swapDB(dbs[0], dbs[1])
	x.w.OK()
}

// cmdWait is WAIT numreplicas timeout. A server of its own has no
// replicas: it answers 0 at once (Redis would block until the timeout
// when asked for more replicas than it has). A cluster node answers 0
// too: its replies to writes are already held until a majority of the
// cluster has them (replwait.go), which is what WAIT would wait for, and
// it has no Redis replicas to count.
func cmdWait(x *Ctx) {
	if _, ok := resp.ParseInt(x.args[1]); !ok {
		x.w.Error(errNotInt)
		return
	}
	t, ok := resp.ParseInt(x.args[2])
	if !ok {
		x.w.Error("ERR timeout is not an integer or out of range")
		return
	}
	if t < 0 {
		x.w.Error("ERR timeout is negative")
		return
	}
	x.w.Int(0)
}

// dbEntry is one key of a database being swapped.
type dbEntry struct {
	key []byte
	e   shards.Entry
}
