//go:build lockcheck

package server

// lockCheck makes every keyspace access of a handler verify that its
// execution holds the key's shard, and every stored value that its bytes
// are not the keyspace's own (checkOwned; ctx.go). CI runs the server
// tests with -tags lockcheck; normal builds compile the checks away.
const lockCheck = true
