package shards

import "sync/atomic"

// Watch is one client's WATCH state. Dirty turns true when any watched key
// is changed; the client reads it at EXEC.
type Watch struct {
	Dirty atomic.Bool
}

// Watch registers w as a watcher of key. Requires key's shard locked.
func (m *Map) Watch(key []byte, w *Watch) {
	s, _ := m.locate(key)
	if s.watch == nil {
		s.watch = make(map[string][]*Watch)
	}
	for _, x := range s.watch[string(key)] {
		if x == w {
			return
		}
	}
	s.watch[string(key)] = append(s.watch[string(key)], w)
}

// Unwatch removes w from key's watchers. Requires key's shard locked.
func (m *Map) Unwatch(key []byte, w *Watch) {
	s, _ := m.locate(key)
	ws := s.watch[string(key)]
	for i, x := range ws {
		if x == w {
			ws[i] = ws[len(ws)-1]
			ws = ws[:len(ws)-1]
			break
		}
	}
	if len(ws) == 0 {
		delete(s.watch, string(key))
		if len(s.watch) == 0 {
			s.watch = nil
		}
		return
	}
	s.watch[string(key)] = ws
}

// touchLocked marks the watchers of key dirty. Requires the shard locked.
func (s *shard) touchLocked(key []byte) {
	if s.watch == nil {
		return
	}
	for _, w := range s.watch[string(key)] {
		w.Dirty.Store(true)
	}
}

// Signal marks the watchers of key dirty without changing it: a write
// that leaves no key behind (a value stored with an expiry already past)
// still breaks WATCHes, as Redis's signalModifiedKey does. Requires key's
// shard locked.
func (m *Map) Signal(key []byte) {
	s, _ := m.locate(key)
	s.touchLocked(key)
}
