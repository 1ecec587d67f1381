package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Listening follows redis.conf's bind: several addresses separated by
// spaces, each listened on with the same port; an address with a '-'
// prefix is optional (skipped when it does not exist on this host, such
// as -::1 without IPv6); "*" is every IPv4 address and "::*" every IPv6
// one. When several addresses are bound, one net.Listener merges them.

// bindAddrs splits a bind setting into addresses and whether each is
// optional.
func bindAddrs(bind string) (addrs []string, optional []bool) {
	for _, a := range strings.Fields(bind) {
		opt := strings.HasPrefix(a, "-")
		a = strings.TrimPrefix(a, "-")
		switch a {
		case "*":
			a = "0.0.0.0"
		case "::*":
			a = "::"
		}
		addrs, optional = append(addrs, a), append(optional, opt)
	}
	if len(addrs) == 0 { // bind "": every address, as no bind line in Redis
		addrs, optional = []string{""}, []bool{false}
	}
	return addrs, optional
}

// listenBind listens on every address of bind at port. A port of 0 picks
// a free port on the first address and uses it for the others.
func listenBind(bind string, port int) (net.Listener, error) {
	addrs, optional := bindAddrs(bind)
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for i, a := range addrs {
		addr := net.JoinHostPort(a, strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil && optional[i] && unavailableAddr(err) {
			continue
		}
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		if port == 0 {
			port = ln.Addr().(*net.TCPAddr).Port
		}
		lns = append(lns, ln)
	}
	switch len(lns) {
	case 0:
		return nil, fmt.Errorf("listen: none of the addresses of bind %q exists on this host", bind)
	case 1:
		return lns[0], nil
	}
	return newMultiListener(lns), nil
}

// unavailableAddr reports whether err says the address does not exist
// here (no such local address, or no IPv6), which an optional address
// tolerates.
func unavailableAddr(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) ||
		errors.Is(err, syscall.EPROTONOSUPPORT)
}

// multiListener accepts on several listeners. Addr is the first one's.
type multiListener struct {
	lns   []net.Listener
	conns chan acceptResult
	done  chan struct{}
	once  sync.Once
}

type acceptResult struct {
	c   net.Conn
	err error
}

func newMultiListener(lns []net.Listener) *multiListener {
	m := &multiListener{lns: lns, conns: make(chan acceptResult), done: make(chan struct{})}
	for _, ln := range lns {
		go m.loop(ln)
	}
	return m
}

// loop hands ln's connections and errors to Accept until Close; a
// connection accepted after Close is closed.
func (m *multiListener) loop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		select {
		case m.conns <- acceptResult{c, err}:
		case <-m.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case r := <-m.conns:
		if r.err != nil && errors.Is(r.err, net.ErrClosed) {
			// One listener was closed under us: the whole listener is.
			m.Close()
		}
		return r.c, r.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	var errs []error
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			errs = append(errs, ln.Close())
		}
	})
	return errors.Join(errs...)
}

func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
