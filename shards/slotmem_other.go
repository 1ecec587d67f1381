//go:build !linux

package shards

import "errors"

func mapSlots(int) ([]slot, error) {
	return nil, errors.New("shards: no slot mappings on this platform")
}

func unmapSlots([]slot) {}

const mapSupported = false
