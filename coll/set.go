package coll

import "fmt"

// Set is not built yet: its family lands in a following change.
type Set struct{}

// NewSet returns an empty value.
func NewSet() *Set { return &Set{} }

func (v *Set) Len() int                       { return 0 }
func (v *Set) Encoding() string               { return "" }
func (v *Set) MemoryUsage() int               { return 0 }
func (v *Set) CloneObject() any               { return &Set{} }
func (v *Set) AppendBinary(dst []byte) []byte { return dst }
func (v *Set) apply(op Op, _ [][]byte) (int64, bool, error) {
	return 0, false, fmt.Errorf("%w: %s not supported yet", ErrBadOp, op)
}

func decodeSet(b []byte) (*Set, error) {
	return nil, fmt.Errorf("%w: set values not supported yet", ErrBadOp)
}
