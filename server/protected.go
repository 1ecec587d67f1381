package server

import (
	"net"
	"net/netip"
)

// Protected mode (protected-mode, default yes), as in Redis 7: while the
// default user has no password, only connections from a loopback address
// (127.0.0.0/8, ::1) are served; any other gets Redis's DENIED error,
// which says how to fix it, and is closed. The check is made once per
// connection, when it is accepted, and costs nothing per command. A
// server bound to loopback only never sees such a connection; one bound to
// 0.0.0.0 (the Docker image) refuses them until a password is set or
// protected mode is turned off. CONFIG SET protected-mode applies to the
// connections accepted after it.

// errProtectedMode is Redis 7.2's reply to a refused connection, word for
// word (tools and people search for it).
const errProtectedMode = "-DENIED Redis is running in protected mode because protected " +
	"mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers to Redis you " +
	"may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command " +
	"'CONFIG SET protected-mode no' from the loopback interface " +
	"by connecting to Redis from the same host the server is " +
	"running, however MAKE SURE Redis is not publicly accessible " +
	"from internet if you do so. Use CONFIG REWRITE to make this " +
	"change permanent. " +
	"2) Alternatively you can just disable the protected mode by " +
	"editing the Redis configuration file, and setting the protected " +
	"mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart " +
	"it with the '--protected-mode no' option. " +
	"4) Set up an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for " +
	"the server to start accepting connections from the outside.\r\n"

// protectedRefuses reports whether protected mode refuses a connection
// from peer.
func (s *Server) protectedRefuses(peer net.Addr) bool {
	return protectedModeRefuses(s.protectedMode.Load(), s.defaultUserHasPassword(), peer)
}

// protectedModeRefuses is the decision: protected mode is on, there is no
// password, and the peer is not a loopback address. A peer that is not an
// IP address (a pipe, a Unix socket) is local.
func protectedModeRefuses(protected, hasPassword bool, peer net.Addr) bool {
	if !protected || hasPassword || peer == nil {
		return false
	}
	var ip netip.Addr
	switch a := peer.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		ap, err := netip.ParseAddrPort(peer.String())
		if err != nil {
			return false
		}
		ip = ap.Addr()
	}
	return ip.IsValid() && !ip.Unmap().IsLoopback()
}
