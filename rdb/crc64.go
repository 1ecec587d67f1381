package rdb

import "hash/crc64"

// jonesTable is the table of CRC-64/Jones as Redis uses it: polynomial
// 0xad93d23594c935a9 reflected (0x95ac9329ac4bc9b5 in hash/crc64's
// reversed notation), initial value 0, no final inversion.
var jonesTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// crc64Jones returns the CRC of b. hash/crc64 inverts the value on the
// way in and out; inverting around it cancels both.
func crc64Jones(b []byte) uint64 {
	return ^crc64.Update(^uint64(0), jonesTable, b)
}
