package coll

import "fmt"

// List is not built yet: its family lands in a following change.
type List struct{}

// NewList returns an empty value.
func NewList() *List { return &List{} }

func (v *List) Len() int                       { return 0 }
func (v *List) Encoding() string               { return "" }
func (v *List) MemoryUsage() int               { return 0 }
func (v *List) CloneObject() any               { return &List{} }
func (v *List) AppendBinary(dst []byte) []byte { return dst }
func (v *List) apply(op Op, _ [][]byte) (int64, bool, error) {
	return 0, false, fmt.Errorf("%w: %s not supported yet", ErrBadOp, op)
}

func decodeList(b []byte) (*List, error) {
	return nil, fmt.Errorf("%w: list values not supported yet", ErrBadOp)
}
