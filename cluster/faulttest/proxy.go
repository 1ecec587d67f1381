package faulttest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// CutMode is what a cut does to the connections it covers.
type CutMode int

const (
	// Refuse closes the connections of a cut pair and closes new ones as
	// soon as they are accepted: the sender sees a reset or EOF at once.
	Refuse CutMode = iota
	// Blackhole keeps the connections open but drops every byte in both
	// directions, like a network that loses packets: the sender waits for
	// its timeouts. Healing closes the blackholed connections (their
	// streams lost bytes), so the sender dials again.
	Blackhole
)

func (m CutMode) String() string {
	if m == Blackhole {
		return "blackhole"
	}
	return "refuse"
}

// Proxy forwards TCP connections to the nodes' real ports and can cut
// them by (from, to) node pairs. The sending node of a connection is known
// by its remote IP (each node dials from its own loopback IP); a
// connection from an unknown IP belongs to no node and is never cut.
//
// Invariant: while (from, to) is cut, no byte from a connection that node
// from opened to node to's proxy reaches node to, and no byte comes back.
type Proxy struct {
	ipNode map[string]int // remote IP -> node index

	mu        sync.Mutex
	mode      CutMode
	cut       map[pair]bool
	conns     map[*proxyConn]struct{}
	listeners []net.Listener
	closed    bool
	wg        sync.WaitGroup
}

type pair struct{ from, to int }

// proxyConn is one accepted connection and, unless it was refused or
// blackholed at accept, its connection to the target.
type proxyConn struct {
	from, to   int
	client     net.Conn
	target     net.Conn // nil when blackholed at accept
	blackholed bool     // under Proxy.mu
	closeOnce  sync.Once
}

func (c *proxyConn) close() {
	c.closeOnce.Do(func() {
		c.client.Close()
		if c.target != nil {
			c.target.Close()
		}
	})
}

// NewProxy returns a proxy that knows node i by the IP ipNode maps to i.
func NewProxy(ipNode map[string]int) *Proxy {
	m := make(map[string]int, len(ipNode))
	for ip, n := range ipNode {
		m[ip] = n
	}
	return &Proxy{ipNode: m, cut: map[pair]bool{}, conns: map[*proxyConn]struct{}{}}
}

// Listen starts forwarding connections accepted on listenAddr (port 0:
// any free port) to target, the real address of node to. It returns the
// address it listens on.
func (p *Proxy) Listen(to int, listenAddr, target string) (string, error) {
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return "", fmt.Errorf("proxy for node %d: %w", to, err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return "", errors.New("proxy closed")
	}
	p.listeners = append(p.listeners, ln)
	p.wg.Add(1)
	p.mu.Unlock()
	go p.accept(ln, to, target)
	return ln.Addr().String(), nil
}

func (p *Proxy) accept(ln net.Listener, to int, target string) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		from := -1
		if host, _, err := net.SplitHostPort(c.RemoteAddr().String()); err == nil {
			if n, ok := p.ipNode[host]; ok {
				from = n
			}
		}
		p.wg.Add(1)
		go p.serve(&proxyConn{from: from, to: to, client: c}, target)
	}
}

// serve forwards one connection until either side closes it or a cut
// closes it.
func (p *Proxy) serve(c *proxyConn, target string) {
	defer p.wg.Done()
	p.mu.Lock()
	if p.closed || (p.cut[pair{c.from, c.to}] && p.mode == Refuse) {
		p.mu.Unlock()
		c.client.Close()
		return
	}
	blackholed := p.cut[pair{c.from, c.to}]
	c.blackholed = blackholed
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	if blackholed { // c.blackholed is read under p.mu only: a cut may set it now
		io.Copy(io.Discard, c.client) // until the peer gives up or heal closes it
		return
	}
	t, err := net.Dial("tcp", target)
	if err != nil {
		return // the node is down: the sender sees its connection close
	}
	p.mu.Lock()
	c.target = t
	closed := p.closed
	if _, ok := p.conns[c]; !ok { // a cut in Refuse mode came in between
		closed = true
	}
	p.mu.Unlock()
	if closed {
		t.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.pump(c, t, c.client); done <- struct{}{} }()
	go func() { p.pump(c, c.client, t); done <- struct{}{} }()
	<-done // one direction ended: end both
	c.close()
	<-done
}

// pump copies src to dst, dropping what it reads while c is blackholed.
func (p *Proxy) pump(c *proxyConn, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			drop := c.blackholed
			p.mu.Unlock()
			if !drop {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// SetMode chooses what later cuts do.
func (p *Proxy) SetMode(m CutMode) {
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
}

// Cut cuts the given (from, to) pairs: existing connections of a pair are closed (Refuse) or silenced
// (Blackhole), new ones refused or silenced.
func (p *Proxy) Cut(pairs ...[2]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range pairs {
		p.cut[pair{pr[0], pr[1]}] = true
	}
	for c := range p.conns {
		if !p.cut[pair{c.from, c.to}] {
			continue
		}
		if p.mode == Refuse {
			delete(p.conns, c)
			c.close()
		} else {
			c.blackholed = true
		}
	}
}

// Isolate cuts node n from every other of the n nodes 0..size-1, both ways.
func (p *Proxy) Isolate(n, size int) {
	var pairs [][2]int
	for i := 0; i < size; i++ {
		if i != n {
			pairs = append(pairs, [2]int{n, i}, [2]int{i, n})
		}
	}
	p.Cut(pairs...)
}

// Split cuts every pair of nodes that are in different groups, both ways.
func (p *Proxy) Split(groups ...[]int) {
	var pairs [][2]int
	for gi, g := range groups {
		for gj, h := range groups {
			if gi == gj {
				continue
			}
			for _, a := range g {
				for _, b := range h {
					pairs = append(pairs, [2]int{a, b})
				}
			}
		}
	}
	p.Cut(pairs...)
}

// Heal removes every cut and closes the blackholed connections.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.cut)
	for c := range p.conns {
		if c.blackholed {
			delete(p.conns, c)
			c.close()
		}
	}
}

// Cuts returns the pairs cut now.
func (p *Proxy) Cuts() [][2]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([][2]int, 0, len(p.cut))
	for pr := range p.cut {
		out = append(out, [2]int{pr.from, pr.to})
	}
	return out
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for _, ln := range p.listeners {
		ln.Close()
	}
	for c := range p.conns {
		c.close()
	}
	clear(p.conns)
	p.mu.Unlock()
	p.wg.Wait()
}
