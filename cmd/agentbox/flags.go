package main

import (
	"github.com/agentbox/agentbox/internal/quantity"
)

// sizeValue is a byte-count flag that accepts K/M/G/T suffixes.
type sizeValue struct{ n *int64 }

func (v sizeValue) String() string {
	if v.n == nil || *v.n == 0 {
		return "0"
	}
	return quantity.FormatSize(*v.n)
}
func (v sizeValue) Set(s string) error {
	n, err := quantity.ParseSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}
func (v sizeValue) Type() string { return "bytes" }

// countValue is a non-negative whole-number flag.
type countValue struct{ n *int64 }

func (v countValue) String() string {
	if v.n == nil {
		return "0"
	}
	return quantity.FormatCount(*v.n)
}
func (v countValue) Set(s string) error {
	n, err := quantity.ParseCount(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}
func (v countValue) Type() string { return "count" }
