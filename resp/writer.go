package resp

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/redcon"
)

// Writer appends RESP replies to a reused buffer. It knows the connection's
// protocol version and picks the RESP2 or RESP3 form of each reply type.
// Not safe for concurrent use: one Writer belongs to one connection.
type Writer struct {
	b     []byte
	resp3 bool
}

// SetRESP3 picks the protocol of the replies that follow: RESP3 when on,
// else RESP2.
func (w *Writer) SetRESP3(on bool) { w.resp3 = on }

// RESP3 reports whether the writer writes RESP3.
func (w *Writer) RESP3() bool { return w.resp3 }

// Bytes returns the pending replies. They stay valid until the next call
// that changes the Writer.
func (w *Writer) Bytes() []byte { return w.b }

// Len returns the number of pending bytes.
func (w *Writer) Len() int { return len(w.b) }

// Cap returns the size of the buffer the pending bytes are kept in.
func (w *Writer) Cap() int { return cap(w.b) }

// Truncate drops the pending bytes after the first n (to replace a
// partial reply, e.g. after a handler panicked).
func (w *Writer) Truncate(n int) { w.b = w.b[:n] }

// Reset drops every pending byte. A buffer that grew past keep bytes is
// released rather than reused.
func (w *Writer) Reset(keep int) {
	if cap(w.b) > keep {
		w.b = nil
		return
	}
	w.b = w.b[:0]
}

// OK appends +OK.
func (w *Writer) OK() { w.b = append(w.b, "+OK\r\n"...) }

// Status appends a simple string; s must not contain CR or LF.
func (w *Writer) Status(s string) { w.b = redcon.AppendString(w.b, s) }

// Error appends an error reply. msg carries its own code ("ERR ...",
// "WRONGTYPE ..."); CR and LF inside it become spaces, as Redis does.
func (w *Writer) Error(msg string) {
	w.b = append(w.b, '-')
	msg = strings.TrimRight(msg, "\r\n")
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.b = append(w.b, c)
	}
	w.b = append(w.b, '\r', '\n')
}

// Int appends an integer reply.
func (w *Writer) Int(n int64) { w.b = appendLine(w.b, ':', n) }

// Bulk appends a bulk string.
func (w *Writer) Bulk(b []byte) { w.b = redcon.AppendBulk(w.b, b) }

// BulkString appends a bulk string.
func (w *Writer) BulkString(s string) { w.b = redcon.AppendBulkString(w.b, s) }

// BulkInt appends n formatted as a bulk string (without redcon's
// AppendBulkInt, which allocates the digits).
func (w *Writer) BulkInt(n int64) {
	var digits [20]byte
	w.b = redcon.AppendBulk(w.b, strconv.AppendInt(digits[:0], n, 10))
}

// Null appends the null bulk string ($-1 in RESP2, _ in RESP3).
func (w *Writer) Null() {
	if w.resp3 {
		w.b = append(w.b, "_\r\n"...)
		return
	}
	w.b = append(w.b, "$-1\r\n"...)
}

// NullArray appends the null array (*-1 in RESP2, _ in RESP3).
func (w *Writer) NullArray() {
	if w.resp3 {
		w.b = append(w.b, "_\r\n"...)
		return
	}
	w.b = append(w.b, "*-1\r\n"...)
}

// Array appends an array header for n elements.
func (w *Writer) Array(n int) { w.b = appendLine(w.b, '*', int64(n)) }

// Map appends a map header for n key/value pairs (a flat array of 2n
// elements in RESP2).
func (w *Writer) Map(n int) {
	if w.resp3 {
		w.b = appendHeader(w.b, '%', n)
		return
	}
	w.b = redcon.AppendArray(w.b, 2*n)
}

// Push appends the header of an out-of-band push frame of n elements (>n in
// RESP3; in RESP2, where pub/sub messages are plain arrays, *n).
func (w *Writer) Push(n int) {
	if w.resp3 {
		w.b = appendHeader(w.b, '>', n)
		return
	}
	w.b = redcon.AppendArray(w.b, n)
}

// Append appends raw, already encoded RESP data.
func (w *Writer) Append(b []byte) { w.b = append(w.b, b...) }

// Set appends a set header (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.resp3 {
		w.b = appendHeader(w.b, '~', n)
		return
	}
	w.b = redcon.AppendArray(w.b, n)
}

// DoubleText appends a double given as its text: a RESP3 double, or the
// text as a bulk string in RESP2.
func (w *Writer) DoubleText(b []byte) {
	if !w.resp3 {
		w.Bulk(b)
		return
	}
	w.b = append(append(append(w.b, ','), b...), '\r', '\n')
}

// Double appends a floating-point reply (a bulk string in RESP2).
func (w *Writer) Double(f float64) {
	if w.resp3 {
		w.b = append(w.b, ',')
		switch {
		case math.IsInf(f, 1):
			w.b = append(w.b, "inf"...)
		case math.IsInf(f, -1):
			w.b = append(w.b, "-inf"...)
		default:
			w.b = strconv.AppendFloat(w.b, f, 'g', 17, 64)
		}
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.BulkString(strconv.FormatFloat(f, 'g', 17, 64))
}

// Bool appends a boolean (#t or #f; the integer 1 or 0 in RESP2).
func (w *Writer) Bool(b bool) {
	switch {
	case !w.resp3 && b:
		w.b = append(w.b, ":1\r\n"...)
	case !w.resp3:
		w.b = append(w.b, ":0\r\n"...)
	case b:
		w.b = append(w.b, "#t\r\n"...)
	default:
		w.b = append(w.b, "#f\r\n"...)
	}
}

// BigNumber appends a big number given in decimal (a bulk string in RESP2).
func (w *Writer) BigNumber(s string) {
	if w.resp3 {
		w.b = append(w.b, '(')
		w.b = append(w.b, s...)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.BulkString(s)
}

// VerbatimFormat appends a verbatim string of the given three-letter
// format (a bulk string of s in RESP2).
func (w *Writer) VerbatimFormat(format, s string) {
	if w.resp3 {
		w.b = appendHeader(w.b, '=', len(s)+4)
		w.b = append(w.b, format...)
		w.b = append(w.b, ':')
		w.b = append(w.b, s...)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.BulkString(s)
}

// Verbatim appends a verbatim string of format "txt" (a bulk string in RESP2).
func (w *Writer) Verbatim(s string) {
	if w.resp3 {
		w.b = appendHeader(w.b, '=', len(s)+4)
		w.b = append(w.b, "txt:"...)
		w.b = append(w.b, s...)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.BulkString(s)
}

func appendHeader(b []byte, c byte, n int) []byte { return appendLine(b, c, int64(n)) }

// appendLine appends c, n in decimal and CRLF (an integer reply, or an
// array, map or bulk header): its length worked out first, then written
// in place, two digits at a time from the end.
func appendLine(b []byte, c byte, n int64) []byte {
	if n >= 0 && n <= 9 {
		return append(b, c, byte('0'+n), '\r', '\n')
	}
	u := uint64(n)
	size := 3 // c, CRLF
	if n < 0 {
		u = -u
		size++
	}
	digits := decimalDigits(u)
	size += digits
	l := len(b)
	if cap(b)-l < size {
		b = slices.Grow(b, size)
	}
	b = b[:l+size]
	b[l] = c
	if n < 0 {
		b[l+1] = '-'
	}
	i := l + size - 2
	b[i], b[i+1] = '\r', '\n'
	PutDigits(b[i-digits:i], u)
	return b
}

// PutDigits writes the last len(d) decimal digits of q into d, padded
// with zeros on the left, two at a time from the end (it inlines).
func PutDigits(d []byte, q uint64) {
	i := len(d)
	for i >= 2 {
		r := q % 100 * 2
		q /= 100
		i -= 2
		d[i], d[i+1] = digitPairs[r], digitPairs[r+1]
	}
	if i == 1 {
		d[0] = byte('0' + q%10)
	}
}

// decimalDigits is how many decimal digits u has (1 for 0).
func decimalDigits(u uint64) int {
	d := (bits.Len64(u) * 1233) >> 12 // about log10(u), maybe one short
	if d < len(pow10) && u >= pow10[d] {
		d++
	}
	return max(d, 1)
}

// pow10[i] is 10^i.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// AppendRequest appends args as a RESP request (an array of bulk strings),
// the form clients send.
func AppendRequest(dst []byte, args ...[]byte) []byte {
	dst = appendHeader(dst, '*', len(args))
	for _, a := range args {
		dst = appendHeader(dst, '$', len(a))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
