package server

// Users and their permissions (ACL), as in Redis 7.0.
//
// Invariants and locking:
//   - A user (aclUser) keeps its identity for its whole life; its rules
//     (aclRules) are immutable once published and replaced as a whole by
//     ACL SETUSER, ACL LOAD or CONFIG SET requirepass, through an atomic
//     pointer. A connection reads its user's current rules with two atomic
//     loads and no lock, so a change applies to the next command of every
//     connection authenticated as that user, as in Redis.
//   - aclState.mu guards the users map (name -> user) and serializes every
//     change of rules; readers of the map (AUTH, ACL commands) take it too.
//     It is never held while a shard lock or a client's lock is taken.
//   - The default user always exists and is never replaced (ACL LOAD copies
//     the file's default rules into it).
//   - The dispatcher's check costs one flag test for a user with every
//     permission (aclRules.open), so the hot path is unchanged.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/turnstile/turnstile/command"
)

// Key pattern permissions (%R~, %W~, %RW~ and ~).
const (
	aclKeyRead  = 1
	aclKeyWrite = 2
	aclKeyAll   = aclKeyRead | aclKeyWrite
)

type aclKeyPattern struct {
	pattern string
	perm    uint8
}

// aclRules are one user's flags, passwords and permissions. Immutable once
// published (aclUser.rules); changes work on a clone.
type aclRules struct {
	enabled bool
	nopass  bool
	// sanitize is "", "sanitize-payload" or "skip-sanitize-payload":
	// accepted and shown, with no effect (no RESTORE payloads here).
	sanitize string
	// passwords are hex SHA-256 hashes, in the order they were added.
	passwords []string
	// future: the last +@all (allcommands) was not followed by -@all:
	// described from "+@all", as Redis's reserved "future commands" bit.
	future bool
	// allCommands: every command is allowed without a bit test (+@all
	// with nothing taken away since).
	allCommands bool
	allowed     []uint64 // bit per command row ID
	// firstArgs are the allowed first arguments of an otherwise denied
	// command without subcommands (+select|0), by row ID.
	firstArgs   map[int][]string
	allKeys     bool
	keys        []aclKeyPattern
	allChannels bool
	channels    []string
	// open: every command, key and channel is allowed; the dispatcher
	// checks nothing more. Computed by seal.
	open bool
}

// aclUser is a user. Its name never changes.
type aclUser struct {
	name  string
	rules atomic.Pointer[aclRules]
}

func (u *aclUser) get() *aclRules { return u.rules.Load() }

// aclState is the server's users, ACL log and ACL file.
type aclState struct {
	mu    sync.Mutex
	users map[string]*aclUser
	def   *aclUser
	log   aclLog
	// allChannels: new and reset users get allchannels
	// (acl-pubsub-default).
	allChannels atomic.Bool
}

func (r *aclRules) clone() *aclRules {
	n := *r
	n.passwords = append([]string(nil), r.passwords...)
	n.allowed = append([]uint64(nil), r.allowed...)
	if r.firstArgs != nil {
		n.firstArgs = make(map[int][]string, len(r.firstArgs))
		for id, a := range r.firstArgs {
			n.firstArgs[id] = append([]string(nil), a...)
		}
	}
	n.keys = append([]aclKeyPattern(nil), r.keys...)
	n.channels = append([]string(nil), r.channels...)
	return &n
}

// seal computes the derived fields before r is published.
func (r *aclRules) seal() *aclRules {
	r.open = r.allCommands && r.allKeys && r.allChannels
	return r
}

// newRules returns the rules of a new user: off, no password, no
// commands or keys, and no channels or all as acl-pubsub-default says.
func (s *Server) newRules() *aclRules {
	return &aclRules{allowed: make([]uint64, (len(s.table.All())+63)/64), allChannels: s.acl.allChannels.Load()}
}

// initACL creates the default user: on, nopass, every permission; with
// requirepass set, that password instead of nopass.
func (s *Server) initACL() {
	a := &s.acl
	a.users = make(map[string]*aclUser)
	a.allChannels.Store(s.cfg.ACLPubsubDefault == "allchannels")
	r := s.newRules()
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		if err := s.applyRule(r, []byte(op)); err != nil {
			panic("acl: default user: " + err.Error())
		}
	}
	a.def = &aclUser{name: "default"}
	if pass := *s.requirePass.Load(); pass != "" {
		s.applyRule(r, []byte("resetpass"))
		s.applyRule(r, []byte(">"+pass))
	}
	a.def.rules.Store(r.seal())
	a.users["default"] = a.def
	a.log.max.Store(int64(s.cfg.ACLLogMaxLen))
}

// setDefaultPassword is CONFIG SET requirepass: the default user's
// passwords become pass ("": nopass), as in Redis.
func (s *Server) setDefaultPassword(pass string) {
	a := &s.acl
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.def.get().clone()
	s.applyRule(r, []byte("resetpass"))
	if pass == "" {
		s.applyRule(r, []byte("nopass"))
	} else {
		s.applyRule(r, []byte(">"+pass))
	}
	a.def.rules.Store(r.seal())
}

// defaultUserHasPassword reports whether the default user needs a
// password (it is not "nopass"): protected mode refuses outside
// connections while it does not.
func (s *Server) defaultUserHasPassword() bool { return !s.acl.def.get().nopass }

// defaultAuthed is whether a new connection starts authenticated: the
// default user is on and nopass.
func (s *Server) defaultAuthed() bool {
	r := s.acl.def.get()
	return r.nopass && r.enabled
}

// aclUserByName returns the user named name, or nil.
func (s *Server) aclUserByName(name []byte) *aclUser {
	s.acl.mu.Lock()
	defer s.acl.mu.Unlock()
	return s.acl.users[string(name)]
}

// checkCredentials returns the user if name exists, is on and pass is one
// of its passwords (or it is nopass). The hash comparison is constant
// time.
func (s *Server) checkCredentials(name, pass []byte) *aclUser {
	u := s.aclUserByName(name)
	if u == nil {
		return nil
	}
	r := u.get()
	if !r.enabled {
		return nil
	}
	if r.nopass {
		return u
	}
	h := hashPassword(pass)
	ok := false
	for _, p := range r.passwords {
		if constantTimeEqual(p, h) {
			ok = true
		}
	}
	if !ok {
		return nil
	}
	return u
}

func constantTimeEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := 0; i < len(a); i++ {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

func hashPassword(p []byte) string {
	sum := sha256.Sum256(p)
	return hex.EncodeToString(sum[:])
}

// Rule errors: Redis's texts for ACL SETUSER and ACL LOAD.
var (
	errACLUnknown  = errors.New("Unknown command or category name in ACL")
	errACLSyntax   = errors.New("Syntax error")
	errACLKeyStar  = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errACLChanStar = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errACLNoPass   = errors.New("The password you are trying to remove from the user does not exist")
	errACLHash     = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errACLFirstArg = errors.New("Allowing first-arg of a subcommand is not supported")
)

func validHash(h []byte) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// hasSpace reports whether s has a space or a NUL byte (not allowed in
// user names and patterns).
func hasSpace(s []byte) bool {
	for _, c := range s {
		if c == ' ' || c == 0 {
			return true
		}
	}
	return false
}

// applyRule applies one rule of Redis's grammar to r (not yet published).
// Selectors "(...)" are not supported.
func (s *Server) applyRule(r *aclRules, op []byte) error {
	if len(op) == 0 {
		return nil
	}
	lower := strings.ToLower(string(op))
	switch lower {
	case "on":
		r.enabled = true
		return nil
	case "off":
		r.enabled = false
		return nil
	case "skip-sanitize-payload", "sanitize-payload":
		r.sanitize = lower
		return nil
	case "nopass":
		r.nopass, r.passwords = true, nil
		return nil
	case "resetpass":
		r.nopass, r.passwords = false, nil
		return nil
	case "reset":
		for _, o := range []string{"resetpass", "resetkeys", "resetchannels", "off", "sanitize-payload", "-@all"} {
			s.applyRule(r, []byte(o))
		}
		r.allChannels = s.acl.allChannels.Load()
		return nil
	case "clearselectors":
		return nil
	case "allkeys", "~*":
		r.allKeys, r.keys = true, nil
		return nil
	case "resetkeys":
		r.allKeys, r.keys = false, nil
		return nil
	case "allchannels", "&*":
		r.allChannels, r.channels = true, nil
		return nil
	case "resetchannels":
		r.allChannels, r.channels = false, nil
		return nil
	case "allcommands", "+@all":
		for i := range r.allowed {
			r.allowed[i] = ^uint64(0)
		}
		r.allCommands, r.future, r.firstArgs = true, true, nil
		return nil
	case "nocommands", "-@all":
		clear(r.allowed)
		r.allCommands, r.future, r.firstArgs = false, false, nil
		return nil
	}
	switch op[0] {
	case '>', '<', '#', '!':
		return r.passwordRule(op)
	case '~', '%':
		return r.keyRule(op)
	case '&':
		if r.allChannels {
			return errACLChanStar
		}
		if hasSpace(op[1:]) {
			return errACLSyntax
		}
		if !containsString(r.channels, string(op[1:])) {
			r.channels = append(r.channels, string(op[1:]))
		}
		return nil
	case '(':
		return errACLSyntax
	case '+', '-':
		return s.commandRule(r, op)
	}
	return errACLSyntax
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *aclRules) passwordRule(op []byte) error {
	var h string
	switch op[0] {
	case '>', '<':
		h = hashPassword(op[1:])
	default:
		if !validHash(op[1:]) {
			return errACLHash
		}
		h = string(op[1:])
	}
	if op[0] == '>' || op[0] == '#' {
		if !containsString(r.passwords, h) {
			r.passwords = append(r.passwords, h)
		}
		r.nopass = false
		return nil
	}
	for i, p := range r.passwords {
		if p == h {
			r.passwords = append(r.passwords[:i], r.passwords[i+1:]...)
			return nil
		}
	}
	return errACLNoPass
}

func (r *aclRules) keyRule(op []byte) error {
	if r.allKeys {
		return errACLKeyStar
	}
	perm, off := uint8(aclKeyAll), 1
	if op[0] == '%' {
		perm = 0
		for ; off < len(op); off++ {
			c := op[off]
			if (c == 'R' || c == 'r') && perm&aclKeyRead == 0 {
				perm |= aclKeyRead
			} else if (c == 'W' || c == 'w') && perm&aclKeyWrite == 0 {
				perm |= aclKeyWrite
			} else if c == '~' {
				off++
				break
			} else {
				return errACLSyntax
			}
		}
	}
	pat := op[min(off, len(op)):]
	if hasSpace(pat) {
		return errACLSyntax
	}
	for i := range r.keys {
		if r.keys[i].pattern == string(pat) {
			r.keys[i].perm |= perm
			return nil
		}
	}
	r.keys = append(r.keys, aclKeyPattern{pattern: string(pat), perm: perm})
	return nil
}

// aclLookup finds a row by its full name ("get", "config|get").
func (s *Server) aclLookup(name string) *Command {
	top, sub, hasSub := strings.Cut(name, "|")
	c := s.table.Lookup([]byte(top))
	if c == nil || !hasSub {
		return c
	}
	if strings.Contains(sub, "|") {
		return nil
	}
	return c.Sub([]byte(sub))
}

func (s *Server) commandRule(r *aclRules, op []byte) error {
	allow := op[0] == '+'
	name := string(op[1:])
	if strings.HasPrefix(name, "@") {
		cat := command.CategoryByName(name[1:])
		if cat == 0 {
			return errACLUnknown
		}
		setCategory(s.table, r, cat, allow)
		return nil
	}
	if !allow || !strings.Contains(name, "|") {
		c := s.aclLookup(name)
		if c == nil {
			return errACLUnknown
		}
		r.changePerm(c, allow)
		return nil
	}
	i := strings.LastIndexByte(name, '|')
	top, sub := name[:i], name[i+1:]
	c := s.aclLookup(top)
	switch {
	case c == nil:
		return errACLUnknown
	case c.Parent() != nil:
		return errACLFirstArg
	case sub == "":
		return errACLSyntax
	case len(c.Subs) > 0:
		sc := s.aclLookup(name)
		if sc == nil {
			return errACLUnknown
		}
		r.changePerm(sc, true)
	default:
		if r.firstArgs == nil {
			r.firstArgs = make(map[int][]string)
		}
		for _, a := range r.firstArgs[c.ID()] {
			if strings.EqualFold(a, sub) {
				return nil
			}
		}
		r.firstArgs[c.ID()] = append(r.firstArgs[c.ID()], sub)
	}
	return nil
}

func (r *aclRules) bit(id int) bool { return r.allowed[id/64]&(1<<(id%64)) != 0 }

func (r *aclRules) setBit(id int, v bool) {
	if v {
		r.allowed[id/64] |= 1 << (id % 64)
	} else {
		r.allowed[id/64] &^= 1 << (id % 64)
		r.allCommands = false
	}
}

// changePerm allows or denies a row; a container's subcommands follow it.
// Its allowed first arguments are forgotten.
func (r *aclRules) changePerm(c *Command, allow bool) {
	r.setBit(c.ID(), allow)
	delete(r.firstArgs, c.ID())
	for _, sub := range c.Subs {
		r.setBit(sub.ID(), allow)
	}
}

// setCategory applies +@cat / -@cat: every row in the category (a
// container with its subcommands).
func setCategory(t *Table, r *aclRules, cat command.Category, allow bool) {
	for _, c := range t.Commands() {
		if c.Categories()&cat != 0 {
			r.changePerm(c, allow)
		}
		for _, sub := range c.Subs {
			if sub.Categories()&cat != 0 {
				r.changePerm(sub, allow)
			}
		}
	}
}
