package coll

import "fmt"

// Stream is not built yet: its family lands in a following change.
type Stream struct{}

// NewStream returns an empty value.
func NewStream() *Stream { return &Stream{} }

func (v *Stream) Len() int                       { return 0 }
func (v *Stream) Encoding() string               { return "" }
func (v *Stream) MemoryUsage() int               { return 0 }
func (v *Stream) CloneObject() any               { return &Stream{} }
func (v *Stream) AppendBinary(dst []byte) []byte { return dst }
func (v *Stream) apply(op Op, _ [][]byte) (int64, bool, error) {
	return 0, false, fmt.Errorf("%w: %s not supported yet", ErrBadOp, op)
}

func decodeStream(b []byte) (*Stream, error) {
	return nil, fmt.Errorf("%w: stream values not supported yet", ErrBadOp)
}
