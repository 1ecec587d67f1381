// Package rdb reads and writes the payloads of Redis's DUMP and RESTORE:
// one value in Redis's RDB serialization, then the RDB version (2 bytes,
// little endian) and a CRC-64 (Jones polynomial, reflected, little endian)
// of everything before it.
//
// Decode reads what redis-server 7.x writes for strings, lists, sets,
// hashes and sorted sets in every encoding it uses (plain, intset,
// ziplist, listpack, quicklist, LZF-compressed strings), and the older
// plain and ziplist forms; streams and module values are refused. Encode
// writes the plain encodings (which every Redis since 2.6 loads), so
// redis-server RESTOREs Turnstile's payloads.
//
// Decode never panics and allocates in proportion to its input: every
// count is checked against the bytes left before anything is allocated.
// The package holds no state; everything is safe for concurrent use.
package rdb
