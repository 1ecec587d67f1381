package server

import (
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// Every change a command makes to the keyspace goes through Ctx.put, Ctx.del
// or Ctx.flush, which apply it and, when a log is attached, record its
// effect (absolute times only). The dispatcher hands a command's effects to
// the log while the command still holds its shard locks, so for any key the
// log order is the lock order; an EXEC hands over all of its effects at
// once. Before replying, the connection waits until the log has written
// (and under appendfsync always, fsynced) everything its commands produced.

// effectLog is what the server needs from the append-only log.
type effectLog interface {
	Append(e persistence.Effect) int64
	Sync(upto int64) error
}

// put stores e under key in the selected database.
func (x *Ctx) put(key []byte, e shards.Entry) { x.putDB(x.c.db, key, e) }

// putDB stores e under key in database db (whose shard must be locked).
func (x *Ctx) putDB(db int, key []byte, e shards.Entry) {
	x.s.dbs[db].Put(key, e)
	x.record(persistence.Effect{Op: persistence.OpSet, DB: db, Key: key, Entry: e})
}

// set stores e at a key found by Lookup (saving a second probe).
func (x *Ctx) set(r shards.Ref, key []byte, e shards.Entry) {
	x.db.Set(r, e)
	x.record(persistence.Effect{Op: persistence.OpSet, DB: x.c.db, Key: key, Entry: e})
}

// del removes key and reports whether a live key was removed.
func (x *Ctx) del(key []byte) bool {
	if !x.db.Delete(key, x.now) {
		return false // nothing live was there: no effect to log
	}
	x.record(persistence.Effect{Op: persistence.OpDel, DB: x.c.db, Key: key})
	return true
}

// flushDB empties database db. Requires every shard locked (the dispatcher
// locks them all for write commands flagged FlagKeyspace).
func (x *Ctx) flushDB(db int) {
	m := x.s.dbs[db]
	for i := 0; i < m.NumShards(); i++ {
		m.FlushLocked(i)
	}
	x.record(persistence.Effect{Op: persistence.OpFlushDB, DB: db})
}

// record queues an effect on the client, and counts the change.
func (x *Ctx) record(e persistence.Effect) {
	x.s.dirty.Add(1)
	if x.s.aof != nil {
		x.c.effects = append(x.c.effects, e)
	}
}

// commitEffects appends the client's queued effects to the log. It must run
// before the command releases its shard locks.
func (s *Server) commitEffects(c *client) {
	if len(c.effects) == 0 {
		return
	}
	for i := range c.effects {
		c.logUpto = s.aof.Append(c.effects[i])
		c.effects[i] = persistence.Effect{} // drop references to request buffers
	}
	c.effects = c.effects[:0]
}
