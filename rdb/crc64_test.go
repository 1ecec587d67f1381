package rdb

import "testing"

// TestCRC64Jones checks the check value of CRC-64/Jones as Redis's crc64.c
// states it.
func TestCRC64Jones(t *testing.T) {
	if got := crc64Jones([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %#x, want 0xe9c6d914c4b8d9ca", got)
	}
}
