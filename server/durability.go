package server

import "github.com/turnstile/turnstile/persistence"

// Durability is where writes become durable before anyone is told of them:
// the append-only log (aofDurability) or, in a cluster, the Raft log. The
// server takes it in Config.Durability; command handlers never see it.
//
// Positions are opaque, increasing int64s (a log offset, a Raft index).
// The server calls Append while it holds the shard locks of every key the
// effects touch, so for any key the order of Append calls is the order of
// its changes; it stamps the returned position on those shards (a reader
// of a shard waits for its mark); and before it sends a reply it calls
// Wait with the highest position the replies depend on.
type Durability interface {
	// Append adds the effects of one execution (a command, an EXEC, a
	// script), in order, as one unit, and returns the position that covers
	// them. It must not block on I/O and must not keep the effects' byte
	// slices (they alias request buffers) after it returns.
	Append(effects []persistence.Effect) int64
	// Wait blocks until everything up to pos is durable under the
	// configured policy, or returns why it cannot be.
	Wait(pos int64) error
	// Tail is the position of the last effect appended so far.
	Tail() int64
}

// aofDurability is the append-only log as the server's Durability.
// Its positions are the log's offsets plus base: a log opened by CONFIG
// SET appendonly yes starts past every position handed out before (by an
// earlier log, now closed), so positions only grow, and a position at or
// below base is already durable.
type aofDurability struct {
	log  *persistence.Log
	base int64
}

func (a aofDurability) Append(effects []persistence.Effect) int64 {
	return a.base + a.log.AppendAll(effects)
}

func (a aofDurability) Wait(pos int64) error {
	if pos <= a.base {
		return nil
	}
	return a.log.Sync(pos - a.base)
}

func (a aofDurability) Tail() int64 { return a.base + a.log.Offset() }

// durBox holds the server's Durability for an atomic pointer.
type durBox struct{ Durability }

// durability returns where writes become durable; nil: nowhere.
func (s *Server) durability() Durability {
	if b := s.dur.Load(); b != nil {
		return b.Durability
	}
	return nil
}

// setDurability makes d (nil: none) where writes become durable. Outside
// New, every shard lock must be held (see Server.dur).
func (s *Server) setDurability(d Durability) {
	if d == nil {
		s.dur.Store(nil)
		return
	}
	s.dur.Store(&durBox{d})
}
