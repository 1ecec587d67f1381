//go:build !lockcheck

package server

// lockCheck is off in normal builds; see lockcheck_on.go.
const lockCheck = false
