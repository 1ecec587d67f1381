package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

// ErrQueryBufLimit closes a client whose unprocessed input exceeds
// MaxQueryBuf (Redis closes such a client without a reply).
var ErrQueryBufLimit = errors.New("query buffer limit reached")

const (
	// InitialReadBuf is the size of a new Reader's input buffer.
	InitialReadBuf = 16 << 10
	minReadSpace   = 4 << 10
)

// Reader splits a byte stream into requests (RESP multibulk or inline). It
// keeps the state of a partly received multibulk, so a request that arrives
// in many pieces is parsed once, not again after every read.
//
// The [][]byte returned by next point into the Reader's buffer and stay
// valid until the next call to fill; a handler that keeps one must copy it.
// Not safe for concurrent use.
type Reader struct {
	buf  []byte
	r, w int // unread input is buf[r:w]
	lim  Limits

	// Partly parsed multibulk request; offsets are relative to r.
	argc int   // -1 when no multibulk request is in progress
	pos  int   // bytes of the current request parsed so far
	offs []int // start/end pairs of the arguments parsed so far

	args  [][]byte // result slice, reused
	arena []byte   // storage for inline arguments, reused

	// Requests parsed ahead by lookahead, complete and not yet returned by
	// next: ahead[i%len(ahead)] for aheadLo <= i < aheadHi.
	ahead            [MaxLookahead]parsedReq
	aheadLo, aheadHi int
}

// MaxLookahead is how many requests Lookahead can hold parsed ahead, and
// the range of AheadSlot.
const MaxLookahead = 4

// parsedReq is a complete multibulk request at buf[start:end]; offs holds
// its arguments' start/end pairs relative to start.
type parsedReq struct {
	start, end int
	offs       []int
	hint       uint64 // set by setAheadHint for the caller's own use
	hinted     bool
	stage      uint8 // set by SetAheadStage for the caller's own use
}

func NewReader(lim Limits) *Reader {
	return &Reader{buf: make([]byte, InitialReadBuf), lim: lim, argc: -1}
}

// fill reads more input from src, compacting or growing the buffer first.
func (rd *Reader) Fill(src io.Reader) error {
	b, err := rd.Space()
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
func (rd *Reader) Space() ([]byte, error) {
	// next has returned every request parsed ahead (more input is read
	// only then), so the buffer may now move.
	rd.aheadLo, rd.aheadHi = 0, 0
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
		if len(rd.buf) > 4*InitialReadBuf && rd.argc < 0 {
			rd.buf = make([]byte, InitialReadBuf) // give back a grown buffer
		}
	}
	if len(rd.buf)-rd.w < minReadSpace {
		if rd.r > 0 {
			rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
			rd.r = 0
		}
		if len(rd.buf)-rd.w < minReadSpace {
			if int64(rd.w) >= rd.lim.MaxQueryBuf {
				return nil, ErrQueryBufLimit
			}
			n := min(int64(2*len(rd.buf)), rd.lim.MaxQueryBuf+minReadSpace)
			nb := make([]byte, n)
			copy(nb, rd.buf[:rd.w])
			rd.buf = nb
		}
	}
	return rd.buf[rd.w:], nil
}

// Shrink gives back a buffer that grew past 4*InitialReadBuf (for a large
// request) once it holds no unread input, so that an idle connection does
// not keep it; Space would do so only at the next read. Arguments that
// next returned stay valid: they point into the old buffer.
func (rd *Reader) Shrink() {
	if rd.r == rd.w && rd.argc < 0 && len(rd.buf) > 4*InitialReadBuf {
		rd.aheadLo, rd.aheadHi = 0, 0
		rd.r, rd.w = 0, 0
		rd.buf = make([]byte, InitialReadBuf)
	}
}

// Buffered returns the number of input bytes read and not yet consumed.
func (rd *Reader) Buffered() int { return rd.w - rd.r }

// Size returns the size of the input buffer.
func (rd *Reader) Size() int { return len(rd.buf) }

// advance records n bytes read into the slice space returned.
func (rd *Reader) Advance(n int) { rd.w += n }

// next returns the next complete request. ok is false when more input is
// needed. An empty request (blank inline line, "*0") is consumed and
// returned as ok with no arguments. unauth applies the stricter limits for
// clients that have not authenticated yet.
func (rd *Reader) Next(unauth bool) (args [][]byte, ok bool, err error) {
	if rd.aheadLo < rd.aheadHi {
		return rd.popAhead(), true, nil
	}
	if rd.r == rd.w {
		return nil, false, nil
	}
	if rd.argc < 0 && rd.buf[rd.r] != '*' {
		return rd.nextInline()
	}
	return rd.nextMultibulk(unauth)
}

func (rd *Reader) nextMultibulk(unauth bool) ([][]byte, bool, error) {
	data := rd.buf[rd.r:rd.w]
	if rd.argc < 0 {
		n, end, err := rd.multibulkHeader(data, unauth)
		if err != nil || end == 0 {
			return nil, false, err
		}
		if n <= 0 {
			rd.r += end
			return nil, true, nil
		}
		rd.argc, rd.pos, rd.offs = int(n), end, rd.offs[:0]
	}
	var done bool
	var err error
	rd.offs, rd.pos, done, err = rd.bulks(data, rd.argc, rd.offs, rd.pos, unauth)
	if !done {
		return nil, false, err
	}
	rd.args = rd.args[:0]
	for i := 0; i < len(rd.offs); i += 2 {
		rd.args = append(rd.args, data[rd.offs[i]:rd.offs[i+1]:rd.offs[i+1]])
	}
	rd.r += rd.pos
	rd.argc, rd.pos = -1, 0
	return rd.args, true, nil
}

// multibulkHeader parses the "*<n>" line at the start of data and checks n
// against the limits.
func (rd *Reader) multibulkHeader(data []byte, unauth bool) (n int64, end int, err error) {
	n, end, err = rd.header(data, "mbulk")
	switch {
	case err != nil || end == 0:
		return 0, 0, err
	case n > rd.lim.MaxMultibulk:
		return 0, 0, &ProtocolError{"invalid multibulk length"}
	case unauth && n > rd.lim.MaxUnauthArgs:
		return 0, 0, &ProtocolError{"unauthenticated multibulk length"}
	}
	return n, end, nil
}

// bulks parses the bulk strings of a request of argc arguments in data,
// resuming at pos with the start/end pairs of those already parsed in offs.
// done is false while more input is needed (or on error).
func (rd *Reader) bulks(data []byte, argc int, offs []int, pos int, unauth bool) (_ []int, _ int, done bool, err error) {
	for len(offs)/2 < argc {
		rest := data[pos:]
		if len(rest) == 0 {
			return offs, pos, false, nil
		}
		if rest[0] != '$' {
			return offs, pos, false, &ProtocolError{fmt.Sprintf("expected '$', got '%c'", rest[0])}
		}
		n, end, err := rd.header(rest, "bulk")
		if err != nil || end == 0 {
			return offs, pos, false, err
		}
		if n < 0 || n > rd.lim.MaxBulkLen {
			return offs, pos, false, &ProtocolError{"invalid bulk length"}
		}
		if unauth && n > rd.lim.MaxUnauthBulk {
			return offs, pos, false, &ProtocolError{"unauthenticated bulk length"}
		}
		if int64(len(rest)) < int64(end)+n+2 {
			return offs, pos, false, nil
		}
		start := pos + end
		offs = append(offs, start, start+int(n))
		pos = start + int(n) + 2 // Redis skips the CRLF after a bulk unchecked
	}
	return offs, pos, true, nil
}

// lookahead parses up to k complete multibulk requests that follow the one
// next returned last, without consuming them, and returns how many are
// parsed ahead. next returns them later without parsing them again. It
// stops early at an incomplete, inline, empty or malformed request (next
// deals with those when it reaches them) and applies the stricter limits
// of an unauthenticated client, so it never does more work than next would.
func (rd *Reader) Lookahead(k int) int {
	k = min(k, MaxLookahead)
	for rd.aheadHi-rd.aheadLo < k {
		pos := rd.r
		if rd.aheadHi > rd.aheadLo {
			pos = rd.ahead[(rd.aheadHi-1)%MaxLookahead].end
		}
		if rd.argc >= 0 || pos >= rd.w || rd.buf[pos] != '*' {
			break
		}
		data := rd.buf[pos:rd.w]
		n, end, err := rd.multibulkHeader(data, true)
		if err != nil || end == 0 || n <= 0 {
			break
		}
		p := &rd.ahead[rd.aheadHi%MaxLookahead]
		offs, stop, done, _ := rd.bulks(data, int(n), p.offs[:0], end, true)
		p.offs = offs
		if !done {
			break
		}
		p.start, p.end, p.hinted, p.stage = pos, pos+stop, false, 0
		rd.aheadHi++
	}
	return rd.aheadHi - rd.aheadLo
}

// aheadArg returns argument i of the j-th request parsed ahead (0 is the
// one next returns next), or nil if there is no such argument.
func (rd *Reader) AheadArg(j, i int) []byte {
	if j >= rd.aheadHi-rd.aheadLo {
		return nil
	}
	p := &rd.ahead[(rd.aheadLo+j)%MaxLookahead]
	if 2*i+1 >= len(p.offs) {
		return nil
	}
	return rd.buf[p.start+p.offs[2*i] : p.start+p.offs[2*i+1]]
}

// setAheadHint attaches h to the j-th request parsed ahead, for aheadHint
// to return while it stays ahead.
func (rd *Reader) SetAheadHint(j int, h uint64) {
	p := &rd.ahead[(rd.aheadLo+j)%MaxLookahead]
	p.hint, p.hinted = h, true
}

// aheadHint returns what setAheadHint attached to the j-th request parsed
// ahead.
func (rd *Reader) AheadHint(j int) (uint64, bool) {
	p := &rd.ahead[(rd.aheadLo+j)%MaxLookahead]
	return p.hint, p.hinted
}

// AheadSlot returns where the j-th request parsed ahead is held, in
// [0, MaxLookahead): the same number while it stays ahead, and no other
// request held ahead at the same time has it, so a caller can keep its own
// data about the request in an array of MaxLookahead indexed by it.
func (rd *Reader) AheadSlot(j int) int { return (rd.aheadLo + j) % MaxLookahead }

// SetAheadStage attaches a small number to the j-th request parsed ahead,
// for AheadStage to return while it stays ahead (0 until set).
func (rd *Reader) SetAheadStage(j int, stage uint8) {
	rd.ahead[(rd.aheadLo+j)%MaxLookahead].stage = stage
}

// AheadStage returns what SetAheadStage attached to the j-th request
// parsed ahead.
func (rd *Reader) AheadStage(j int) uint8 {
	return rd.ahead[(rd.aheadLo+j)%MaxLookahead].stage
}

// popAhead returns the oldest request parsed ahead as next would.
func (rd *Reader) popAhead() [][]byte {
	p := &rd.ahead[rd.aheadLo%MaxLookahead]
	if rd.aheadLo++; rd.aheadLo == rd.aheadHi {
		rd.aheadLo, rd.aheadHi = 0, 0
	}
	data := rd.buf[p.start:p.end]
	rd.args = rd.args[:0]
	for i := 0; i < len(p.offs); i += 2 {
		rd.args = append(rd.args, data[p.offs[i]:p.offs[i+1]:p.offs[i+1]])
	}
	rd.r = p.end
	return rd.args
}

// header parses a "*<n>\r\n" or "$<n>\r\n" line at the start of data. end is
// 0 when the line is not complete yet.
func (rd *Reader) header(data []byte, what string) (n int64, end int, err error) {
	if n, end, ok := shortHeader(data, rd.lim.MaxInline); ok {
		return n, end, nil
	}
	return rd.anyHeader(data, what)
}

// anyHeader is header for any line.
func (rd *Reader) anyHeader(data []byte, what string) (n int64, end int, err error) {
	cr := bytes.IndexByte(data, '\r')
	if cr > rd.lim.MaxInline || cr < 0 || cr+1 >= len(data) {
		if cr > rd.lim.MaxInline || len(data) > rd.lim.MaxInline {
			return 0, 0, &ProtocolError{"too big " + what + " count string"}
		}
		return 0, 0, nil
	}
	n, ok := ParseInt(data[1:cr])
	if !ok {
		if what == "bulk" {
			return 0, 0, &ProtocolError{"invalid bulk length"}
		}
		return 0, 0, &ProtocolError{"invalid multibulk length"}
	}
	return n, cr + 2, nil
}

// shortHeader is header's common case read in one pass: 1 to 18 digits
// without a leading zero (or "0" itself) after the line's first byte,
// then '\r' and a byte after it (header does not look at that byte
// either), the '\r' within maxInline. It returns what header would; ok
// is false, having decided nothing, for any other line.
func shortHeader(data []byte, maxInline int) (n int64, end int, ok bool) {
	i := 1
	for ; i < len(data) && i <= 18; i++ {
		c := data[i] - '0'
		if c > 9 {
			break
		}
		n = n*10 + int64(c)
	}
	if i == 1 || i+1 >= len(data) || data[i] != '\r' || i > maxInline || data[1] == '0' && i > 2 {
		return 0, 0, false
	}
	return n, i + 2, true
}

func (rd *Reader) nextInline() ([][]byte, bool, error) {
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
	args, arena, err := SplitArgs(line, rd.args[:0], rd.arena[:0])
	if err != nil {
		return nil, false, err
	}
	rd.args, rd.arena = args, arena
	rd.r += nl + 1
	return args, true, nil
}
