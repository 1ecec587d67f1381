package server

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// client-output-buffer-limit: how much undelivered output a client may
// cost the server, per class of client, as in redis.conf:
//
//	client-output-buffer-limit <class> <hard> <soft> <soft-seconds> ...
//
// A client is closed, without a further reply, once its undelivered output
// reaches the hard limit, or stays at or above the soft limit for more than
// soft-seconds (0 bytes: no such limit). The defaults are Redis's:
// "normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60". A value names one
// or more classes; CONFIG SET changes only those. Each closing is counted
// in INFO stats client_output_buffer_limit_disconnections.
//
// Turnstile's connections apply the limits to what they really hold:
//
//   - normal class (a client not subscribed to anything): its pending
//     replies. A connection writes its replies once 64 KiB gather or its
//     batch of requests is done, and while the socket does not take them
//     it reads no further request: a client that pipelines without reading
//     meets backpressure, not a growing buffer. So the pending output is at
//     most 64 KiB plus one reply, and the limits matter for large replies
//     (GET of a big value, KEYS, LRANGE): a reply at or over the hard limit
//     closes the client, and a write that cannot finish while at or over the
//     soft limit gets soft-seconds (its write deadline) before the client is
//     closed.
//   - pubsub class (a client subscribed to a channel or pattern): likewise
//     its own replies; and for every client, the outbound queue of pub/sub
//     messages and invalidations from other connections (outq.go), which
//     grows while the client does not read: a push that takes it to the
//     hard limit, or finds it at or above the soft limit for more than
//     soft-seconds, closes the client.
//   - replica class: kept and reported for redis.conf compatibility; a
//     Turnstile cluster replicates through Raft, not replica connections.

// Client classes, in CONFIG GET's order.
const (
	classNormal = iota
	classReplica
	classPubSub
	numClientClasses
)

// classNames are the names CONFIG GET prints ("slave", as Redis 7.0 does).
var classNames = [numClientClasses]string{"normal", "slave", "pubsub"}

// OutputBufferLimit is one class's limits.
type OutputBufferLimit struct {
	Hard, Soft  int64 // bytes; 0: no such limit
	SoftSeconds int64 // how long output may stay at or above Soft
}

// OutputBufferLimits is client-output-buffer-limit: the limits of every
// class.
type OutputBufferLimits struct {
	Class [numClientClasses]OutputBufferLimit
	// given has bit i set when Class[i] holds a value: always all classes
	// in a Config from DefaultConfig; in the scratch Config of CONFIG SET,
	// the classes the value names, the only ones it changes.
	given uint8
}

// DefaultOutputBufferLimits are Redis's defaults.
func DefaultOutputBufferLimits() OutputBufferLimits {
	return OutputBufferLimits{
		Class: [numClientClasses]OutputBufferLimit{
			classNormal:  {},
			classReplica: {Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60},
			classPubSub:  {Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60},
		},
		given: 1<<numClientClasses - 1,
	}
}

// merge returns l with the classes o holds a value for replaced by o's.
func (l OutputBufferLimits) merge(o OutputBufferLimits) OutputBufferLimits {
	for i := range o.Class {
		if o.given&(1<<i) != 0 {
			l.Class[i] = o.Class[i]
			l.given |= 1 << i
		}
	}
	return l
}

// Redis's CONFIG SET errors for client-output-buffer-limit.
const (
	errObufArgs    = configError("Wrong number of arguments in buffer limit configuration.")
	errObufClass   = configError("Invalid client class specified in buffer limit configuration.")
	errObufSetting = configError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
)

// parseOutputBufferLimits parses "<class> <hard> <soft> <soft-seconds> ..."
// into l, changing only the classes named, and only if every group is
// valid. Class names: normal, slave or replica, pubsub (any case).
func parseOutputBufferLimits(l *OutputBufferLimits, v string) error {
	f := strings.Fields(v)
	if len(f)%4 != 0 {
		return errObufArgs
	}
	var o OutputBufferLimits
	for i := 0; i < len(f); i += 4 {
		class := -1
		switch strings.ToLower(f[i]) {
		case "normal":
			class = classNormal
		case "slave", "replica":
			class = classReplica
		case "pubsub":
			class = classPubSub
		}
		if class < 0 {
			return errObufClass
		}
		hard, err1 := ParseMemory(f[i+1])
		soft, err2 := ParseMemory(f[i+2])
		secs, err3 := strconv.ParseInt(f[i+3], 10, 32)
		if err1 != nil || err2 != nil || err3 != nil || secs < 0 {
			return errObufSetting
		}
		o.Class[class] = OutputBufferLimit{Hard: hard, Soft: soft, SoftSeconds: secs}
		o.given |= 1 << class
	}
	*l = l.merge(o)
	return nil
}

func formatOutputBufferLimits(l OutputBufferLimits) string {
	var b strings.Builder
	for i, c := range l.Class {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s %d %d %d", classNames[i], c.Hard, c.Soft, c.SoftSeconds)
	}
	return b.String()
}

var outputBufferLimitsCodec = codec[OutputBufferLimits]{
	parse: func(v string) (OutputBufferLimits, error) {
		var l OutputBufferLimits
		err := parseOutputBufferLimits(&l, v)
		return l, err
	},
	format: formatOutputBufferLimits,
}

// outputLimitsRow is the configuration row. Its parse merges into the
// Config's value (a config file may give one class per line), and its set
// merges the classes a CONFIG SET names into the running server's limits.
func outputLimitsRow() *ConfigParam {
	p := row("client-output-buffer-limit",
		`undelivered output per client class: "<class> <hard> <soft> <seconds> ..." (classes normal, replica, pubsub)`,
		func(c *Config) *OutputBufferLimits { return &c.OutputLimits }, outputBufferLimitsCodec)
	p.parse = func(c *Config, v string) error { return parseOutputBufferLimits(&c.OutputLimits, v) }
	return p.mutable(func(s *Server) string { return formatOutputBufferLimits(*s.outLimits.Load()) },
		func(s *Server, c *Config) {
			for {
				old := s.outLimits.Load()
				l := old.merge(c.OutputLimits)
				if s.outLimits.CompareAndSwap(old, &l) {
					return
				}
			}
		})
}

// outputLimit returns the limits of a class on the running server.
func (s *Server) outputLimit(class int) OutputBufferLimit { return s.outLimits.Load().Class[class] }

// exceeds reports whether n bytes of undelivered output break limit l: at
// or over the hard limit, or at or over the soft limit for more than
// SoftSeconds since *since, which it sets when n first reaches the soft
// limit and clears when n is below it.
func (l OutputBufferLimit) exceeds(n int64, since *time.Time) bool {
	if l.Hard > 0 && n >= l.Hard {
		return true
	}
	if l.Soft <= 0 || n < l.Soft {
		*since = time.Time{}
		return false
	}
	now := time.Now()
	if since.IsZero() {
		*since = now
		return false
	}
	return now.Sub(*since) > time.Duration(l.SoftSeconds)*time.Second
}

// softDeadline is when output that reached the soft limit at since breaks
// it, if it stays there. Soft-seconds 0 gets a second: Redis never closes a
// client the moment it first reaches the soft limit, only at a later check
// that finds it still there, and one blocking write is a single check.
func (l OutputBufferLimit) softDeadline(since time.Time) time.Time {
	return since.Add(max(time.Duration(l.SoftSeconds)*time.Second, time.Second))
}

// replyClass is the class whose limits apply to the client's own replies.
// Owner goroutine only.
func (c *client) replyClass() int {
	if c.subscribed() {
		return classPubSub
	}
	return classNormal
}

// overOutputLimit closes the client for its output buffer limit: logged
// and counted; the caller ends the connection.
func (c *client) overOutputLimit(class int, pending int64, why string) {
	c.s.stats.outputLimitDisconns.Add(1)
	c.s.log.Warn("closing client for overcoming its output buffer limit",
		"client", c.addr, "class", classNames[class], "pending_bytes", pending, "limit", why)
}

// writeLimited writes b, the client's own pending replies or a batch of
// its outbound queue, under the class's limits: over the hard limit it
// writes nothing, and at or over the soft limit the write must finish
// within soft-seconds. false: the client is to be closed (the limit, or a
// failed write).
func (c *client) writeLimited(b []byte, class int) bool {
	lim := c.s.outputLimit(class)
	n := int64(len(b))
	if lim.Hard > 0 && n >= lim.Hard {
		c.overOutputLimit(class, n, "hard")
		return false
	}
	soft := lim.Soft > 0 && n >= lim.Soft
	if soft {
		c.conn.SetWriteDeadline(lim.softDeadline(time.Now()))
	}
	var err error
	if c.fd >= 0 {
		err = c.writeRaw(b)
	} else {
		_, err = c.conn.Write(b)
	}
	if soft {
		if err != nil && os.IsTimeout(err) && !c.killed.Load() {
			c.overOutputLimit(class, n, "soft")
			return false
		}
		c.conn.SetWriteDeadline(time.Time{})
		if c.killed.Load() { // kill's deadline may just have been cleared
			return false
		}
	}
	return err == nil
}
