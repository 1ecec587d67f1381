//go:build !linux

package server

// Without the raw socket loop (it is Linux only: conn_raw_linux.go), every
// connection, socket or not, is served by the portable serveStream loop over
// net.Conn Read and Write.

// rawLoopSupported reports whether serveRawConn can serve sockets here.
const rawLoopSupported = false

// serveRawConn serves nothing on this platform: the caller uses serveStream.
func (c *client) serveRawConn() (served bool, err error) {
	return false, nil
}

// writeRaw is net.Conn.Write here. flush calls it only while c.fd is set,
// which happens only in the raw loop, so it is not called on this platform.
func (c *client) writeRaw(b []byte) error {
	_, err := c.conn.Write(b)
	return err
}

// peerGone reports false: without the raw socket loop there is no
// descriptor to look at without reading (forward.go).
func (c *client) peerGone() bool { return false }
