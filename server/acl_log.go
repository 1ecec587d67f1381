package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// aclLogGroupWindow: a denial like a recent entry (same reason, context,
// object and user, within this time) bumps that entry's count.
const aclLogGroupWindow = 60 * time.Second

// aclLog is ACL LOG: the most recent denials first, at most max entries
// (acllog-max-len). mu guards entries.
type aclLog struct {
	mu      sync.Mutex
	entries []*aclLogEntry // newest first
	max     atomic.Int64
}

type aclLogEntry struct {
	count            int64
	reason, context  string
	object, username string
	at               int64 // Unix ms of the last occurrence
	clientInfo       string
}

var aclReasonNames = [...]string{aclDeniedCmd: "command", aclDeniedKey: "key", aclDeniedChannel: "channel", aclDeniedAuth: "auth"}

// add records a denial by client c.
func (l *aclLog) add(s *Server, c *client, reason int, context, object, username string) {
	now := s.clock.Now()
	info := c.info(now)
	e := &aclLogEntry{count: 1, reason: aclReasonNames[reason], context: context, object: object,
		username: username, at: now / 1e6, clientInfo: info}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, old := range l.entries[:min(10, len(l.entries))] {
		d := old.at - e.at
		if d < 0 {
			d = -d
		}
		if old.reason == e.reason && old.context == e.context && old.object == e.object &&
			old.username == e.username && d <= aclLogGroupWindow.Milliseconds() {
			old.count++
			old.at, old.clientInfo = e.at, e.clientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = old
			return
		}
	}
	l.entries = append([]*aclLogEntry{e}, l.entries...)
	if m := int(l.max.Load()); len(l.entries) > m {
		clear(l.entries[m:])
		l.entries = l.entries[:m]
	}
}

// aclLogCmd is ACL LOG [count|RESET].
func aclLogCmd(x *Ctx) {
	l := &x.s.acl.log
	count := int64(10)
	if len(x.args) == 3 {
		if equalFold("reset", x.args[2]) && len(x.args[2]) == 5 {
			l.mu.Lock()
			l.entries = nil
			l.mu.Unlock()
			x.w.OK()
			return
		}
		n, err := strconv.ParseInt(string(x.args[2]), 10, 64)
		if err != nil {
			x.w.Error(errNotInt)
			return
		}
		count = max(n, 0)
	}
	l.mu.Lock()
	entries := append([]*aclLogEntry(nil), l.entries[:min(int(count), len(l.entries))]...)
	copies := make([]aclLogEntry, len(entries))
	for i, e := range entries {
		copies[i] = *e
	}
	l.mu.Unlock()
	nowMs := x.s.clock.Now() / 1e6
	x.w.Array(len(copies))
	for _, e := range copies {
		x.w.Map(7)
		x.w.BulkString("count")
		x.w.Int(e.count)
		x.w.BulkString("reason")
		x.w.BulkString(e.reason)
		x.w.BulkString("context")
		x.w.BulkString(e.context)
		x.w.BulkString("object")
		x.w.BulkString(e.object)
		x.w.BulkString("username")
		x.w.BulkString(e.username)
		x.w.BulkString("age-seconds")
		x.w.Double(float64(nowMs-e.at) / 1000)
		x.w.BulkString("client-info")
		x.w.BulkString(e.clientInfo)
	}
}
