package cluster

import (
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is Raft's TCP stream layer, with one difference from
// raft.NewTCPTransport's: it dials from the IP it listens on. A node bound
// to its own address (e.g. 127.0.0.2 on one machine) is then recognisable
// by the source address of its connections, which is what a fault-injecting
// proxy in front of each Raft port needs to cut chosen links.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	local     *net.TCPAddr // dial source; nil: the kernel's choice
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
	sl := &streamLayer{ln: ln, advertise: adv}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		sl.local = &net.TCPAddr{IP: ip}
	}
	return sl, nil
}

func (s *streamLayer) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *streamLayer) Close() error              { return s.ln.Close() }
func (s *streamLayer) Addr() net.Addr            { return s.advertise }

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if s.local != nil {
		d.LocalAddr = s.local
	}
	return d.Dial("tcp", string(address))
}

var _ raft.StreamLayer = (*streamLayer)(nil)
