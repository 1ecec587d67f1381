//go:build linux

package server

// peerCloseBound is how soon a loop must notice a close that arrived with
// the peer's last request: the raw loop sees it at its next recheck.
const peerCloseBound = 2 * idleRecheck
