package cluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is Raft's TCP stream layer, with one difference from
// raft.NewTCPTransport's: it dials from the IP it listens on. A node bound
// to its own address (e.g. 127.0.0.2 on one machine) is then recognisable
// by the source address of its connections, which is what a fault-injecting
// proxy in front of each Raft port needs to cut chosen links.
//
// It can also cut the node off (isolate): every Raft connection closes and
// new ones are refused both ways, as in a network partition, until it is
// healed. The in-process tests use that; across processes, the fault
// harness cuts links in proxies instead.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	local     *net.TCPAddr // dial source; nil: the kernel's choice

	mu    sync.Mutex
	cut   bool
	conns map[*trackedConn]struct{}
}

// trackedConn is a Raft connection the layer can close when it isolates
// the node.
type trackedConn struct {
	net.Conn
	sl *streamLayer
}

func (c *trackedConn) Close() error {
	c.sl.mu.Lock()
	delete(c.sl.conns, c)
	c.sl.mu.Unlock()
	return c.Conn.Close()
}

// track registers c, or closes it and fails if the node is cut off.
func (s *streamLayer) track(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		c.Close()
		return nil, errIsolated
	}
	t := &trackedConn{Conn: c, sl: s}
	s.conns[t] = struct{}{}
	return t, nil
}

var errIsolated = errors.New("cluster: node isolated")

// isolate cuts the node off from every other (on) or heals it (off).
func (s *streamLayer) isolate(on bool) {
	s.mu.Lock()
	s.cut = on
	var open []*trackedConn
	if on {
		for c := range s.conns {
			open = append(open, c)
		}
	}
	s.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

func newStreamLayer(bind, advertise string) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen on --raft-addr %s: %w", bind, err)
	}
	adv, err := net.ResolveTCPAddr("tcp", advertise)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("cluster: --raft-advertise %s: %w", advertise, err)
	}
	sl := &streamLayer{ln: ln, advertise: adv, conns: map[*trackedConn]struct{}{}}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		sl.local = &net.TCPAddr{IP: ip}
	}
	return sl, nil
}

func (s *streamLayer) Accept() (net.Conn, error) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return nil, err
		}
		if t, err := s.track(c); err == nil {
			return t, nil
		}
	}
}

func (s *streamLayer) Close() error   { return s.ln.Close() }
func (s *streamLayer) Addr() net.Addr { return s.advertise }

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if s.local != nil {
		d.LocalAddr = s.local
	}
	c, err := d.Dial("tcp", string(address))
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

var _ raft.StreamLayer = (*streamLayer)(nil)
