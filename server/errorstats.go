package server

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Error statistics (INFO errorstats): error replies counted by their
// prefix, the text before the first space within the first 32 bytes ("ERR"
// when there is none), as Redis counts them. Only failing commands take the
// lock. As Redis, at most errorStatsMax distinct prefixes are tracked: a new
// one beyond them turns the tracking off (logged) until CONFIG RESETSTAT.

const errorStatsMax = 128

// errorStats is guarded by mu.
type errorStats struct {
	mu       sync.Mutex
	counts   map[string]int64
	disabled bool
}

// errorPrefix returns the prefix of an error text (without the '-').
func errorPrefix[T ~string | ~[]byte](text T) string {
	for i := range min(len(text), 32) {
		if text[i] == ' ' {
			return string(text[:i])
		}
	}
	return "ERR"
}

// countError counts one error reply whose text (after '-') is text.
func countError[T ~string | ~[]byte](s *Server, text T) {
	s.stats.errorReplies.Add(1) // INFO stats total_error_replies, even when errorstats is off
	e := &s.ops.errs
	p := errorPrefix(text)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.disabled {
		return
	}
	if e.counts == nil {
		e.counts = make(map[string]int64)
	}
	if _, ok := e.counts[string(p)]; !ok && len(e.counts) >= errorStatsMax {
		e.disabled = true
		e.counts = nil
		s.log.Warn("errorstats: more than " + strconv.Itoa(errorStatsMax) + " distinct error prefixes; error statistics are off until CONFIG RESETSTAT")
		return
	}
	e.counts[string(p)]++
}

// countReplyError counts the error reply that starts at offset mark of
// reply (a RESP error, "-TEXT\r\n").
func (s *Server) countReplyError(reply []byte) {
	if len(reply) == 0 || reply[0] != '-' {
		return
	}
	line := reply[1:]
	if i := bytes.IndexByte(line, '\r'); i >= 0 {
		line = line[:i]
	}
	countError(s, line)
}

func (e *errorStats) reset() {
	e.mu.Lock()
	e.counts, e.disabled = nil, false
	e.mu.Unlock()
}

func infoErrorStats(s *Server, b *strings.Builder, _ int64) {
	e := &s.ops.errs
	e.mu.Lock()
	names := make([]string, 0, len(e.counts))
	for n := range e.counts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.WriteString("errorstat_" + n + ":count=" + strconv.FormatInt(e.counts[n], 10) + "\r\n")
	}
	e.mu.Unlock()
}
