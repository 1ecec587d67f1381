package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// A minimal RESP2 client: commands are appended to a buffer and written in
// one go (pipelining), replies read one at a time in order. Only what the
// flood needs: simple strings, errors, integers, bulk strings and arrays.

// reply is one RESP reply. typ is the RESP type byte: '+', '-', ':', '$'
// ('$' with null set for a nil bulk string) or '*'.
type reply struct {
	typ  byte
	str  string // '+', '-' (the error text) and '$'
	num  int64  // ':'
	null bool   // '$' or '*' with length -1
	arr  []reply
}

// isErr reports whether r is an error reply.
func (r reply) isErr() bool { return r.typ == '-' }

type conn struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte // commands appended, not yet written
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}, nil
}

func (c *conn) close() { c.nc.Close() }

// appendCmd appends one command to the pending buffer.
func (c *conn) appendCmd(args ...string) {
	c.buf = append(c.buf, '*')
	c.buf = strconv.AppendInt(c.buf, int64(len(args)), 10)
	c.buf = append(c.buf, '\r', '\n')
	for _, a := range args {
		c.buf = append(c.buf, '$')
		c.buf = strconv.AppendInt(c.buf, int64(len(a)), 10)
		c.buf = append(c.buf, '\r', '\n')
		c.buf = append(c.buf, a...)
		c.buf = append(c.buf, '\r', '\n')
	}
}

// flush writes the pending commands, giving up at deadline.
func (c *conn) flush(deadline time.Time) error {
	c.nc.SetWriteDeadline(deadline)
	_, err := c.nc.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

// do sends one command and reads its reply; an error reply is a reply, not
// an error.
func (c *conn) do(timeout time.Duration, args ...string) (reply, error) {
	deadline := time.Now().Add(timeout)
	c.appendCmd(args...)
	if err := c.flush(deadline); err != nil {
		return reply{}, err
	}
	return c.read(deadline)
}

// read reads one reply, giving up at deadline.
func (c *conn) read(deadline time.Time) (reply, error) {
	c.nc.SetReadDeadline(deadline)
	return c.readReply(0)
}

// maxDepth bounds the nesting of arrays read (the flood sees at most 1).
const maxDepth = 8

func (c *conn) line() ([]byte, error) {
	b, err := c.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("RESP line longer than 64 KiB")
		}
		return nil, err
	}
	if len(b) < 3 || b[len(b)-2] != '\r' {
		return nil, fmt.Errorf("bad RESP line %q", b)
	}
	return b[:len(b)-2], nil
}

func (c *conn) readReply(depth int) (reply, error) {
	b, err := c.line()
	if err != nil {
		return reply{}, err
	}
	r := reply{typ: b[0]}
	body := b[1:]
	switch r.typ {
	case '+', '-':
		r.str = string(body)
	case ':':
		r.num, err = strconv.ParseInt(string(body), 10, 64)
	case '$', '*':
		var n int
		if n, err = strconv.Atoi(string(body)); err != nil || n < 0 {
			r.null = err == nil // a length of -1: the null bulk or array
			break
		}
		if r.typ == '$' {
			buf := make([]byte, n+2)
			if _, err = io.ReadFull(c.r, buf); err == nil {
				r.str = string(buf[:n])
			}
			break
		}
		if depth >= maxDepth {
			return reply{}, errors.New("RESP arrays nested too deep")
		}
		r.arr = make([]reply, n)
		for i := range r.arr {
			if r.arr[i], err = c.readReply(depth + 1); err != nil {
				break
			}
		}
	default:
		err = fmt.Errorf("unexpected RESP type %q", r.typ)
	}
	return r, err
}
