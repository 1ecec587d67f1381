package server

import (
	"sort"
	"strings"

	"github.com/turnstile/turnstile/command"
)

// How users are shown: ACL GETUSER, ACL LIST and the ACL file.

// countCategory counts the rows of a category r allows and denies.
func countCategory(t *Table, r *aclRules, cat command.Category) (on, off int) {
	for _, c := range t.All() {
		if c.Categories()&cat == 0 {
			continue
		}
		if r.bit(c.ID()) {
			on++
		} else {
			off++
		}
	}
	return on, off
}

// describeCommands describes r's command permissions as rules that
// rebuild them, as Redis 7.0 does: "+@all" or "-@all", then categories
// chosen greedily (most rows in common with the user, fewest
// differences), then single commands for what is left. Single commands
// come in table order (Redis: its hash table's order).
func (s *Server) describeCommands(r *aclRules) string {
	t := s.table
	var b strings.Builder
	fake, temp := s.newRules(), s.newRules()
	additive := !r.future
	if additive {
		b.WriteString("-@all ")
	} else {
		b.WriteString("+@all ")
		s.applyRule(fake, []byte("+@all"))
	}
	copy(temp.allowed, r.allowed)
	names := command.CategoryNames()
	applied := make([]bool, len(names))
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j, n := range names {
			if applied[j] {
				continue
			}
			on, off := countCategory(t, temp, command.CategoryByName(n))
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < minDiff || diff == minDiff && same > maxSame) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		cat := command.CategoryByName(names[best])
		setCategory(t, fake, cat, additive)
		setCategory(t, temp, cat, !additive)
		if additive {
			b.WriteString("+@")
		} else {
			b.WriteString("-@")
		}
		b.WriteString(names[best] + " ")
		applied[best] = true
	}
	var single func(c *Command)
	single = func(c *Command) {
		user, f := r.bit(c.ID()), fake.bit(c.ID())
		if user != f {
			if user {
				b.WriteString("+")
			} else {
				b.WriteString("-")
			}
			b.WriteString(c.FullName() + " ")
			fake.changePerm(c, user)
		}
		for _, sub := range c.Subs {
			single(sub)
		}
		if !user {
			for _, a := range r.firstArgs[c.ID()] {
				b.WriteString("+" + c.FullName() + "|" + a + " ")
			}
		}
	}
	for _, c := range t.Commands() {
		single(c)
	}
	return strings.TrimSuffix(b.String(), " ")
}

// keysString is the user's key patterns as ACL GETUSER shows them.
func (r *aclRules) keysString() string {
	if r.allKeys {
		return "~*"
	}
	parts := make([]string, len(r.keys))
	for i, k := range r.keys {
		parts[i] = patternString(k)
	}
	return strings.Join(parts, " ")
}

func patternString(k aclKeyPattern) string {
	switch k.perm {
	case aclKeyAll:
		return "~" + k.pattern
	case aclKeyRead:
		return "%R~" + k.pattern
	default:
		return "%W~" + k.pattern
	}
}

// channelsString is the user's channel patterns as ACL GETUSER shows them.
func (r *aclRules) channelsString() string {
	if r.allChannels {
		return "&*"
	}
	parts := make([]string, len(r.channels))
	for i, c := range r.channels {
		parts[i] = "&" + c
	}
	return strings.Join(parts, " ")
}

// flagNames are the user's flags as ACL GETUSER lists them.
func (r *aclRules) flagNames() []string {
	f := []string{"off"}
	if r.enabled {
		f[0] = "on"
	}
	if r.nopass {
		f = append(f, "nopass")
	}
	if r.sanitize != "" {
		f = append(f, r.sanitize)
	}
	return f
}

// describeUser is the user's rules in ACL LIST / ACL file form (after
// "user <name> ").
func (s *Server) describeUser(r *aclRules) string {
	var b strings.Builder
	for _, f := range r.flagNames() {
		b.WriteString(f + " ")
	}
	for _, p := range r.passwords {
		b.WriteString("#" + p + " ")
	}
	if r.allKeys {
		b.WriteString("~* ")
	} else {
		for _, k := range r.keys {
			b.WriteString(patternString(k) + " ")
		}
	}
	if r.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range r.channels {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(s.describeCommands(r))
	return b.String()
}

// sortedUsers returns the users sorted by name (Redis's radix tree order).
// The caller holds acl.mu.
func (a *aclState) sortedUsers() []*aclUser {
	out := make([]*aclUser, 0, len(a.users))
	for _, u := range a.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
