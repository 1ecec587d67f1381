package server

import "github.com/turnstile/turnstile/command"

// Reasons a command is denied (ACL LOG "reason").
const (
	aclOK = iota
	aclDeniedCmd
	aclDeniedKey
	aclDeniedChannel
	aclDeniedAuth
)

// aclCheck reports whether rules r let args run as cmd. When not, it
// returns the reason and, for a key or channel, its argument index. The
// caller skips it for open rules (every permission).
func aclCheck(r *aclRules, cmd *Command, args [][]byte) (reason, pos int) {
	if !r.allCommands && !cmd.Has(command.NoAuth) && !r.bit(cmd.ID()) && !firstArgAllowed(r, cmd, args) {
		return aclDeniedCmd, 0
	}
	if !r.allKeys && cmd.FirstKey > 0 {
		perm := uint8(aclKeyAll)
		switch {
		case cmd.Has(command.Readonly):
			perm = aclKeyRead
		case cmd.Has(command.Write):
			perm = aclKeyWrite
		}
		var buf [16]int
		for _, i := range cmd.KeyPositions(args, buf[:0]) {
			if !keyAllowed(r, args[i], perm) {
				return aclDeniedKey, i
			}
		}
	}
	if !r.allChannels && cmd.Group == "pubsub" && cmd.Parent() == nil {
		pattern := false
		switch cmd.Name {
		case "publish":
			args = args[:2]
		case "psubscribe":
			pattern = true
		case "subscribe":
		default:
			return aclOK, 0
		}
		for i := 1; i < len(args); i++ {
			if !channelAllowed(r, args[i], pattern) {
				return aclDeniedChannel, i
			}
		}
	}
	return aclOK, 0
}

func firstArgAllowed(r *aclRules, cmd *Command, args [][]byte) bool {
	allowed := r.firstArgs[cmd.ID()]
	idx := 1
	if cmd.Parent() != nil {
		idx = 2
	}
	if len(allowed) == 0 || len(args) <= idx {
		return false
	}
	for _, a := range allowed {
		if len(a) == len(args[idx]) && equalFold(a, args[idx]) {
			return true
		}
	}
	return false
}

func equalFold(a string, b []byte) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func keyAllowed(r *aclRules, key []byte, perm uint8) bool {
	for _, k := range r.keys {
		if k.perm&perm == perm && globMatch([]byte(k.pattern), key, false) {
			return true
		}
	}
	return false
}

// channelAllowed matches a channel against the user's patterns; a
// PSUBSCRIBE pattern must equal one of them literally, as in Redis.
func channelAllowed(r *aclRules, ch []byte, pattern bool) bool {
	for _, p := range r.channels {
		if pattern && p == string(ch) || !pattern && globMatch([]byte(p), ch, false) {
			return true
		}
	}
	return false
}

// noPermError is the dispatcher's reply for a denied command.
func noPermError(reason int, cmd *Command) string {
	switch reason {
	case aclDeniedCmd:
		return "NOPERM this user has no permissions to run the '" + cmd.FullName() + "' command"
	case aclDeniedKey:
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	default:
		return "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
}

// scriptNoPermError is the error redis.call raises for a denied command.
func scriptNoPermError(reason int) string {
	switch reason {
	case aclDeniedCmd:
		return "ERR The user executing the script can't run this command or subcommand"
	case aclDeniedKey:
		return "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
	default:
		return "ERR The user executing the script can't publish to the channel mentioned in the command"
	}
}

// aclDenied checks c's permission for cmd (not open: the caller tested
// r.open) and logs a denial. It returns the reason (aclOK if allowed).
func (s *Server) aclDenied(c *client, r *aclRules, cmd *Command, args [][]byte, context string) int {
	reason, pos := aclCheck(r, cmd, args)
	if reason == aclOK {
		return aclOK
	}
	object := cmd.FullName()
	if reason != aclDeniedCmd {
		object = string(args[pos])
	}
	s.acl.log.add(s, c, reason, context, object, c.userName())
	return reason
}
