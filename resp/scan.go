package resp

import (
	"bytes"
	"fmt"
)

// Reply framing: where one reply ends in a stream of replies, without
// decoding it. A connection that relays another server's replies (a
// cluster follower forwarding to its leader) copies each reply's bytes
// unchanged, so it needs only the frame boundaries.

// maxScanCount bounds a declared length or element count; a larger one is
// malformed (no reply that large can be buffered).
const maxScanCount = 1 << 32

// ReplyScanner finds where replies end. It resumes where it stopped, so a
// large reply that arrives in many reads is scanned once, not again from
// its start after every read. The zero value is ready to use.
type ReplyScanner struct {
	pos  int // bytes of the current reply scanned so far (whole elements)
	need int // elements still to scan; 0: no reply in progress
}

// ScanReply reports the length of the first reply at the start of b, as
// ReplyScanner.Scan does for a scanner with nothing in progress.
func ScanReply(b []byte) (int, error) {
	var s ReplyScanner
	return s.Scan(b)
}

// Scan reports the length of the reply at the start of b: n > 0 when b[:n]
// is one whole reply (RESP2 or RESP3: simple and error strings, integers,
// bulk strings, arrays, nulls, booleans, doubles, big numbers, verbatim and
// bulk errors, maps, sets, attributes with the reply they annotate, and
// push frames); n == 0 when b holds only its beginning, and the next call
// must pass the same reply's bytes again, from its start, with more after
// them. A malformed reply is an error (so are the streamed forms "$?" and
// "*?", which Redis does not send), and the scanner starts afresh.
//
// The scan is iterative, so nesting depth costs no stack.
func (s *ReplyScanner) Scan(b []byte) (int, error) {
	if s.need == 0 {
		s.pos, s.need = 0, 1
	}
	for s.need > 0 {
		end, more, err := scanElement(b, s.pos)
		if err != nil {
			*s = ReplyScanner{}
			return 0, err
		}
		if end == 0 {
			return 0, nil
		}
		s.pos, s.need = end, s.need-1+more
	}
	n := s.pos
	*s = ReplyScanner{}
	return n, nil
}

// scanElement scans the element at b[pos:]: its header line and, for the
// bulk types, its data. end is where it ends (0: incomplete), more how
// many nested elements follow it.
func scanElement(b []byte, pos int) (end, more int, err error) {
	if pos >= len(b) {
		return 0, 0, nil
	}
	t := b[pos]
	if !replyType(t) {
		return 0, 0, fmt.Errorf("reply: unknown type byte %q", t)
	}
	nl := bytes.IndexByte(b[pos:], '\n')
	if nl < 0 {
		return 0, 0, nil
	}
	if nl < 1 || b[pos+nl-1] != '\r' {
		return 0, 0, fmt.Errorf("reply: line not ended by CRLF")
	}
	line := b[pos+1 : pos+nl-1]
	end = pos + nl + 1
	switch t {
	case '_':
		if len(line) != 0 {
			return 0, 0, fmt.Errorf("reply: null with content")
		}
	case '#':
		if len(line) != 1 || line[0] != 't' && line[0] != 'f' {
			return 0, 0, fmt.Errorf("reply: bad boolean %q", line)
		}
	case '$', '=', '!':
		n, err := scanCount(line, t == '$')
		if err != nil {
			return 0, 0, err
		}
		if n < 0 { // $-1: the null bulk string
			break
		}
		if int64(len(b)-end) < n+2 {
			return 0, 0, nil
		}
		data := end + int(n)
		if b[data] != '\r' || b[data+1] != '\n' {
			return 0, 0, fmt.Errorf("reply: bulk not ended by CRLF")
		}
		end = data + 2
	case '*', '~', '>', '%', '|':
		n, err := scanCount(line, t == '*')
		if err != nil {
			return 0, 0, err
		}
		switch {
		case n < 0: // *-1: the null array
		case t == '%':
			more = 2 * int(n)
		case t == '|': // the attribute's pairs, then the reply it annotates
			more = 2*int(n) + 1
		default:
			more = int(n)
		}
	}
	return end, more, nil
}

// IsPush reports whether a reply Scan framed is a RESP3 push frame
// (out-of-band data such as pub/sub messages, not the answer to a request).
func IsPush(reply []byte) bool { return len(reply) > 0 && reply[0] == '>' }

// replyType reports whether t starts a RESP2 or RESP3 reply.
func replyType(t byte) bool {
	switch t {
	case '+', '-', ':', '$', '*', '_', ',', '#', '(', '=', '!', '%', '~', '>', '|':
		return true
	}
	return false
}

// scanCount parses a length or element count; -1 (null) only when
// nullable.
func scanCount(line []byte, nullable bool) (int64, error) {
	n, ok := ParseInt(line)
	switch {
	case !ok:
		return 0, fmt.Errorf("reply: bad length %q", line)
	case n == -1 && nullable:
		return -1, nil
	case n < 0 || n > maxScanCount:
		return 0, fmt.Errorf("reply: length %d out of range", n)
	}
	return n, nil
}
