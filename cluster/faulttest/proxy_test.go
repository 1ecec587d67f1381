//go:build linux

package faulttest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServer answers every line with the same line, on a free port of ip.
func echoServer(t *testing.T, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// dialFrom connects to addr from the loopback IP of node from.
func dialFrom(t *testing.T, fromIP, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fromIP)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, fromIP, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends a line and reports whether the same line came back
// within d; it fails the test on a wrong answer.
func roundTrip(t *testing.T, c net.Conn, line string, d time.Duration) bool {
	t.Helper()
	c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return false
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return false
	}
	if got != line+"\n" {
		t.Fatalf("echo of %q came back as %q", line, got)
	}
	return true
}

// closedSoon reports whether c is closed by the other side within d (a
// read returns EOF or reset rather than timing out).
func closedSoon(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, os.ErrDeadlineExceeded)
}

// Three "nodes" 0, 1, 2 on 127.0.0.1-3; node 0's proxy forwards to an
// echo server. A connection from 127.0.0.9 belongs to no node.
func proxyFixture(t *testing.T) (*Proxy, string) {
	p := NewProxy(map[string]int{"127.0.0.1": 0, "127.0.0.2": 1, "127.0.0.3": 2})
	t.Cleanup(p.Close)
	addr, err := p.Listen(0, "127.0.0.1:0", echoServer(t, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	return p, addr
}

func TestProxyRefuseCutsOnePairOneWay(t *testing.T) {
	p, addr := proxyFixture(t)
	c1 := dialFrom(t, "127.0.0.2", addr)
	c2 := dialFrom(t, "127.0.0.3", addr)
	if !roundTrip(t, c1, "a", 2*time.Second) || !roundTrip(t, c2, "b", 2*time.Second) {
		t.Fatal("proxy does not forward")
	}
	p.Cut([2]int{1, 0})
	if !closedSoon(c1, 2*time.Second) {
		t.Fatal("cut 1->0 left node 1's existing connection open")
	}
	if !roundTrip(t, c2, "c", 2*time.Second) {
		t.Fatal("cut 1->0 broke node 2's connection")
	}
	if !closedSoon(dialFrom(t, "127.0.0.2", addr), 2*time.Second) {
		t.Fatal("cut 1->0 accepted a new connection from node 1")
	}
	// The reverse direction is another pair: cutting 0->1 is not 1->0.
	p.Heal()
	p.Cut([2]int{0, 1})
	if !roundTrip(t, dialFrom(t, "127.0.0.2", addr), "d", 2*time.Second) {
		t.Fatal("cut 0->1 cut node 1's connections to node 0")
	}
	if !roundTrip(t, dialFrom(t, "127.0.0.9", addr), "e", 2*time.Second) {
		t.Fatal("a connection from an unknown IP was cut")
	}
}

func TestProxyHealRestoresNewConnections(t *testing.T) {
	p, addr := proxyFixture(t)
	p.Isolate(0, 3)
	if got := len(p.Cuts()); got != 4 {
		t.Fatalf("isolating node 0 of 3 cut %d pairs, want 4", got)
	}
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		if !closedSoon(dialFrom(t, ip, addr), 2*time.Second) {
			t.Fatalf("isolated node 0 accepted a connection from %s", ip)
		}
	}
	p.Heal()
	if !roundTrip(t, dialFrom(t, "127.0.0.2", addr), "x", 2*time.Second) {
		t.Fatal("heal did not restore node 1 -> 0")
	}
}

func TestProxySplitCutsAcrossGroupsOnly(t *testing.T) {
	p, addr := proxyFixture(t)
	p.Split([]int{0, 1}, []int{2})
	if !roundTrip(t, dialFrom(t, "127.0.0.2", addr), "same side", 2*time.Second) {
		t.Fatal("split {0,1}|{2} cut 1->0")
	}
	if !closedSoon(dialFrom(t, "127.0.0.3", addr), 2*time.Second) {
		t.Fatal("split {0,1}|{2} let 2->0 through")
	}
}

func TestProxyBlackholeDropsUntilHealThenCloses(t *testing.T) {
	p, addr := proxyFixture(t)
	p.SetMode(Blackhole)
	c := dialFrom(t, "127.0.0.2", addr)
	if !roundTrip(t, c, "before", 2*time.Second) {
		t.Fatal("proxy does not forward")
	}
	p.Cut([2]int{1, 0})
	if roundTrip(t, c, "during", 300*time.Millisecond) {
		t.Fatal("blackholed connection still answers")
	}
	fresh := dialFrom(t, "127.0.0.2", addr)
	if roundTrip(t, fresh, "new", 300*time.Millisecond) {
		t.Fatal("new connection through a blackhole answers")
	}
	p.Heal()
	if !closedSoon(c, 2*time.Second) || !closedSoon(fresh, 2*time.Second) {
		t.Fatal("heal left blackholed connections open")
	}
	if !roundTrip(t, dialFrom(t, "127.0.0.2", addr), "after", 2*time.Second) {
		t.Fatal("heal did not restore forwarding")
	}
}

func TestProxyTargetDownClosesConnection(t *testing.T) {
	p := NewProxy(map[string]int{"127.0.0.2": 1})
	t.Cleanup(p.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	addr, err := p.Listen(0, "127.0.0.1:0", dead)
	if err != nil {
		t.Fatal(err)
	}
	if !closedSoon(dialFrom(t, "127.0.0.2", addr), 2*time.Second) {
		t.Fatal("connection to a proxy whose node is down stays open")
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("proxy listens on %s", addr)
	}
}

// Cuts and heals while connections are being accepted (run with -race):
// every connection ends up forwarding, refused, or closed, never stuck.
func TestProxyCutsRaceWithAccepts(t *testing.T) {
	p, addr := proxyFixture(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p.SetMode(CutMode(i % 2))
			p.Cut([2]int{1, 0})
			p.Heal()
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(100 * time.Millisecond))
				io.WriteString(c, "x\n")
				c.Read(make([]byte, 2)) // either outcome is fine
				c.Close()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-done
	if !roundTrip(t, dialFrom(t, "127.0.0.2", addr), "after", 2*time.Second) {
		t.Fatal("no forwarding after the last heal")
	}
}
