package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/turnstile/turnstile/shards"
)

// Limits bound what one client may send. Each is checked before memory is
// committed, so a hostile request costs its connection, never the server.
type Limits struct {
	MaxBulkLen    int64 // proto-max-bulk-len: longest bulk string
	MaxQueryBuf   int64 // client-query-buffer-limit: unprocessed bytes buffered
	MaxMultibulk  int64 // most arguments in one request
	MaxInline     int   // longest inline request, and longest header line
	MaxUnauthArgs int64 // most arguments before AUTH when a password is set
	MaxUnauthBulk int64 // longest bulk before AUTH when a password is set
}

// DefaultLimits are Redis's defaults.
var DefaultLimits = Limits{
	MaxBulkLen:    512 << 20,
	MaxQueryBuf:   1 << 30,
	MaxMultibulk:  1 << 20,
	MaxInline:     64 << 10,
	MaxUnauthArgs: 10,
	MaxUnauthBulk: 16384,
}

// ProtocolError is a malformed request. The connection answers
// "ERR Protocol error: <msg>" and closes.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// errQueryBufLimit closes a client whose unprocessed input exceeds
// MaxQueryBuf (Redis closes such a client without a reply).
var errQueryBufLimit = errors.New("query buffer limit reached")

const (
	initialReadBuf = 16 << 10
	minReadSpace   = 4 << 10
)

// reader splits a byte stream into requests (RESP multibulk or inline). It
// keeps the state of a partly received multibulk, so a request that arrives
// in many pieces is parsed once, not again after every read.
//
// The [][]byte returned by next point into the reader's buffer and stay
// valid until the next call to fill; a handler that keeps one must copy it.
// Not safe for concurrent use.
type reader struct {
	buf  []byte
	r, w int // unread input is buf[r:w]
	lim  Limits

	// Partly parsed multibulk request; offsets are relative to r.
	argc int   // -1 when no multibulk request is in progress
	pos  int   // bytes of the current request parsed so far
	offs []int // start/end pairs of the arguments parsed so far

	args  [][]byte // result slice, reused
	arena []byte   // storage for inline arguments, reused
}

func newReader(lim Limits) *reader {
	return &reader{buf: make([]byte, initialReadBuf), lim: lim, argc: -1}
}

// fill reads more input from src, compacting or growing the buffer first.
func (rd *reader) fill(src io.Reader) error {
	b, err := rd.space()
	if err != nil {
		return err
	}
	n, err := src.Read(b)
	rd.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// space makes room for more input, compacting or growing the buffer, and
// returns the free part of it (at least minReadSpace bytes). The caller
// reads into it and then records what it read with advance.
func (rd *reader) space() ([]byte, error) {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
		if len(rd.buf) > 4*initialReadBuf && rd.argc < 0 {
			rd.buf = make([]byte, initialReadBuf) // give back a grown buffer
		}
	}
	if len(rd.buf)-rd.w < minReadSpace {
		if rd.r > 0 {
			rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
			rd.r = 0
		}
		if len(rd.buf)-rd.w < minReadSpace {
			if int64(rd.w) >= rd.lim.MaxQueryBuf {
				return nil, errQueryBufLimit
			}
			n := min(int64(2*len(rd.buf)), rd.lim.MaxQueryBuf+minReadSpace)
			nb := make([]byte, n)
			copy(nb, rd.buf[:rd.w])
			rd.buf = nb
		}
	}
	return rd.buf[rd.w:], nil
}

// advance records n bytes read into the slice space returned.
func (rd *reader) advance(n int) { rd.w += n }

// next returns the next complete request. ok is false when more input is
// needed. An empty request (blank inline line, "*0") is consumed and
// returned as ok with no arguments. unauth applies the stricter limits for
// clients that have not authenticated yet.
func (rd *reader) next(unauth bool) (args [][]byte, ok bool, err error) {
	if rd.r == rd.w {
		return nil, false, nil
	}
	if rd.argc < 0 && rd.buf[rd.r] != '*' {
		return rd.nextInline()
	}
	return rd.nextMultibulk(unauth)
}

func (rd *reader) nextMultibulk(unauth bool) ([][]byte, bool, error) {
	data := rd.buf[rd.r:rd.w]
	if rd.argc < 0 {
		n, end, err := rd.header(data, "mbulk")
		if err != nil || end == 0 {
			return nil, false, err
		}
		if n > rd.lim.MaxMultibulk {
			return nil, false, &ProtocolError{"invalid multibulk length"}
		}
		if unauth && n > rd.lim.MaxUnauthArgs {
			return nil, false, &ProtocolError{"unauthenticated multibulk length"}
		}
		if n <= 0 {
			rd.r += end
			return nil, true, nil
		}
		rd.argc, rd.pos, rd.offs = int(n), end, rd.offs[:0]
	}
	for len(rd.offs)/2 < rd.argc {
		rest := data[rd.pos:]
		if len(rest) == 0 {
			return nil, false, nil
		}
		if rest[0] != '$' {
			return nil, false, &ProtocolError{fmt.Sprintf("expected '$', got '%c'", rest[0])}
		}
		n, end, err := rd.header(rest, "bulk")
		if err != nil || end == 0 {
			return nil, false, err
		}
		if n < 0 || n > rd.lim.MaxBulkLen {
			return nil, false, &ProtocolError{"invalid bulk length"}
		}
		if unauth && n > rd.lim.MaxUnauthBulk {
			return nil, false, &ProtocolError{"unauthenticated bulk length"}
		}
		if int64(len(rest)) < int64(end)+n+2 {
			return nil, false, nil
		}
		start := rd.pos + end
		rd.offs = append(rd.offs, start, start+int(n))
		rd.pos = start + int(n) + 2 // Redis skips the CRLF after a bulk unchecked
	}
	rd.args = rd.args[:0]
	for i := 0; i < len(rd.offs); i += 2 {
		rd.args = append(rd.args, data[rd.offs[i]:rd.offs[i+1]:rd.offs[i+1]])
	}
	rd.r += rd.pos
	rd.argc, rd.pos = -1, 0
	return rd.args, true, nil
}

// header parses a "*<n>\r\n" or "$<n>\r\n" line at the start of data. end is
// 0 when the line is not complete yet.
func (rd *reader) header(data []byte, what string) (n int64, end int, err error) {
	cr := bytes.IndexByte(data, '\r')
	if cr > rd.lim.MaxInline || cr < 0 || cr+1 >= len(data) {
		if cr > rd.lim.MaxInline || len(data) > rd.lim.MaxInline {
			return 0, 0, &ProtocolError{"too big " + what + " count string"}
		}
		return 0, 0, nil
	}
	n, ok := shards.ParseCanonicalInt(data[1:cr])
	if !ok {
		if what == "bulk" {
			return 0, 0, &ProtocolError{"invalid bulk length"}
		}
		return 0, 0, &ProtocolError{"invalid multibulk length"}
	}
	return n, cr + 2, nil
}

func (rd *reader) nextInline() ([][]byte, bool, error) {
	data := rd.buf[rd.r:rd.w]
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || nl > rd.lim.MaxInline {
		if nl > rd.lim.MaxInline || len(data) > rd.lim.MaxInline {
			return nil, false, &ProtocolError{"too big inline request"}
		}
		return nil, false, nil
	}
	line := data[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, arena, err := splitArgs(line, rd.args[:0], rd.arena[:0])
	if err != nil {
		return nil, false, err
	}
	rd.args, rd.arena = args, arena
	rd.r += nl + 1
	return args, true, nil
}
