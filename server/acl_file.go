package server

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/turnstile/turnstile/internal/atomicfile"
)

// loadACLFile is ACL LOAD (and start-up with aclfile): the file's "user
// name rules..." lines replace every user, or nothing changes if any line
// is wrong. It returns Redis's error text, or "". The clients of every
// user but default are disconnected (self after its reply), as in Redis;
// the default user keeps its identity and takes the file's rules (or, if
// the file has none, those of a fresh default user).
func (s *Server) loadACLFile(file string, self *client) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Sprintf("Error loading ACLs, opening file '%s': %s", file, errnoText(err))
	}
	users := map[string]*aclRules{}
	var errs strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		num := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Fields(line) // Redis splits on single spaces and skips empty ones
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", file, num)
			continue
		}
		if hasSpace([]byte(argv[1])) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", file, num, argv[1])
			continue
		}
		if _, dup := users[argv[1]]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", argv[1], num)
			continue
		}
		r := s.newRules()
		syntax := false
		for _, op := range argv[2:] {
			op = strings.Trim(op, "\t\r\n")
			if err := s.applyRule(r, []byte(op)); err != nil {
				if err == errACLUnknown {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", file, num, op, err)
				} else if !syntax {
					fmt.Fprintf(&errs, "%s:%d: %s. ", file, num, err)
					syntax = true
				}
			}
		}
		users[argv[1]] = r
	}
	if errs.Len() > 0 {
		return errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	}
	a := &s.acl
	a.mu.Lock()
	old := a.users
	a.users = make(map[string]*aclUser, len(users)+1)
	def, ok := users["default"]
	if !ok {
		def = s.newRules()
		for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
			s.applyRule(def, []byte(op))
		}
	}
	a.def.rules.Store(def.seal())
	a.users["default"] = a.def
	for name, r := range users {
		if name == "default" {
			continue
		}
		u := &aclUser{name: name}
		u.rules.Store(r.seal())
		a.users[name] = u
	}
	a.mu.Unlock()
	for name, u := range old {
		if name != "default" {
			s.killUserClients(self, u, nil)
		}
	}
	return ""
}

// errnoText is the system error text without Go's "open <file>: " prefix.
func errnoText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		msg := pe.Err.Error()
		return strings.ToUpper(msg[:1]) + msg[1:]
	}
	return err.Error()
}

// saveACLFile is ACL SAVE: every user as a "user name rules" line, written
// to a temporary file in the same directory, synced and renamed over file.
func (s *Server) saveACLFile(file string) error {
	var b bytes.Buffer
	s.acl.mu.Lock()
	for _, u := range s.acl.sortedUsers() {
		b.WriteString("user " + u.name + " " + s.describeUser(u.get()) + "\n")
	}
	s.acl.mu.Unlock()
	if err := atomicfile.Write(file, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("acl save: %w", err)
	}
	return nil
}
