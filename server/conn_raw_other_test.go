//go:build !linux

package server

import "time"

// peerCloseBound is how soon a loop must notice a close that arrived with
// the peer's last request: the stream loop's blocking read returns it.
const peerCloseBound = 400 * time.Millisecond
