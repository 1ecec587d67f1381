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
// returns the reason and, for a key or channel, the one refused. The
// caller skips it for open rules (every permission).
//
// Keys are those the table names (key positions, or the row's Locks
// function: EVAL's declared keys, numkeys forms), each needing the
// permissions its row's KeyAccessFor says (Redis's key spec flags).
func aclCheck(r *aclRules, cmd *Command, args [][]byte) (reason int, object []byte) {
	if !r.allCommands && !cmd.Has(command.NoAuth) && !r.bit(cmd.ID()) && !firstArgAllowed(r, cmd, args) {
		return aclDeniedCmd, nil
	}
	if !r.allKeys && (cmd.FirstKey > 0 || cmd.Locks != nil) {
		if cmd.Locks != nil {
			var refused []byte
			n := 0
			cmd.Locks(args, 0, 1<<30, func(_ int, key []byte) {
				if refused == nil && !keyAllowed(r, key, uint8(cmd.KeyAccessFor(args, n))) {
					refused = key
				}
				n++
			})
			if refused != nil {
				return aclDeniedKey, refused
			}
		} else {
			var buf [16]int
			for n, i := range cmd.KeyPositions(args, buf[:0]) {
				if !keyAllowed(r, args[i], uint8(cmd.KeyAccessFor(args, n))) {
					return aclDeniedKey, args[i]
				}
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
			return aclOK, nil
		}
		for i := 1; i < len(args); i++ {
			if !channelAllowed(r, args[i], pattern) {
				return aclDeniedChannel, args[i]
			}
		}
	}
	return aclOK, nil
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

// execNoPermError is EXEC's reply for a queued command the user may no
// longer run.
func execNoPermError(reason int) string {
	why := "no permission to execute the command or subcommand"
	switch reason {
	case aclDeniedKey:
		why = "no permission to touch the specified keys"
	case aclDeniedChannel:
		why = "no permission to access one of the channels used as arguments"
	}
	return "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why
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
	reason, refused := aclCheck(r, cmd, args)
	if reason == aclOK {
		return aclOK
	}
	object := cmd.FullName()
	if reason != aclDeniedCmd {
		object = string(refused)
	}
	s.acl.log.add(s, c, reason, context, object, c.userName())
	return reason
}
