package server

// The idle client timeout (redis.conf "timeout", seconds; 0, the default,
// never closes anyone): a client that has neither sent nor been sent
// anything for longer than that is closed, without a reply, as Redis does.
// As in Redis, blocked clients (BLPOP and the like, whatever their own
// timeout) and clients subscribed to channels or patterns are exempt: they
// are idle by design.
//
// Activity is client.active (client.touch): the server time a command
// last ran, input last arrived without completing a command (a request in
// pieces), or a large batch of replies was last written; a forwarded
// blocking command that waits for the leader refreshes it as it polls.
// The background loop looks once a second, so a client goes between
// timeout and timeout+1 s after its last activity; closing is kill, which
// the connection's own goroutine carries out.

// closeIdleClients kills the clients idle for longer than the timeout at
// server time now and returns how many.
func (s *Server) closeIdleClients(now int64) int {
	limit := s.idleTimeout.Load() * 1e9
	if limit <= 0 {
		return 0
	}
	n := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		if c.killed.Load() || c.isBlocked.Load() || c.nsub.Load()+c.npsub.Load() > 0 {
			continue
		}
		if now-c.active.Load() > limit {
			s.log.Debug("closing idle client", "client", c.addr, "timeout_s", limit/1e9)
			c.kill()
			n++
		}
	}
	return n
}
