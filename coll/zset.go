package coll

import "fmt"

// ZSet is not built yet: its family lands in a following change.
type ZSet struct{}

// NewZSet returns an empty value.
func NewZSet() *ZSet { return &ZSet{} }

func (v *ZSet) Len() int                       { return 0 }
func (v *ZSet) Encoding() string               { return "" }
func (v *ZSet) MemoryUsage() int               { return 0 }
func (v *ZSet) CloneObject() any               { return &ZSet{} }
func (v *ZSet) AppendBinary(dst []byte) []byte { return dst }
func (v *ZSet) apply(op Op, _ [][]byte) (int64, bool, error) {
	return 0, false, fmt.Errorf("%w: %s not supported yet", ErrBadOp, op)
}

func decodeZSet(b []byte) (*ZSet, error) {
	return nil, fmt.Errorf("%w: zset values not supported yet", ErrBadOp)
}
