//go:build !amd64 && !arm64

package shards

func prefetch(uintptr) {}
