package server

import "github.com/turnstile/turnstile/command"

// Handler runs one command. The dispatcher has checked the command's arity,
// the client's authentication and the server's state, and holds the shards
// of the command's keys (see doc.go).
type Handler = func(*Ctx)

// Command is a row of the server's command table (package command).
type Command = command.Command[Handler]

// Table is the server's command table.
type Table = command.Table[Handler]

// newTable builds the table from the command families' rows.
func newTable(groups ...[]*Command) *Table {
	return command.New(func(h Handler) bool { return h != nil }, groups...)
}
