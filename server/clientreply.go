package server

import "github.com/turnstile/turnstile/command"

// CLIENT REPLY ON|OFF|SKIP: a connection may turn its replies off, or skip
// the reply of its next command. The connection loop drops the replies the
// mode hides right after each command (applyReplyMode); the common case,
// replies on, costs it one byte compare.

const (
	replyOn       uint8 = iota
	replyOff            // no replies until CLIENT REPLY ON
	replySkipNext       // set by CLIENT REPLY SKIP: its own reply is dropped, and the next command's
	replySkipThis       // the next command's reply is dropped
)

func clientReply(x *Ctx) {
	switch {
	case isKeyword(x.args[2], "on"):
		x.c.replyMode = replyOn
		x.w.OK()
	case isKeyword(x.args[2], "off"):
		x.c.replyMode = replyOff
	case isKeyword(x.args[2], "skip"):
		if x.c.replyMode != replyOff { // as Redis: SKIP while OFF stays OFF
			x.c.replyMode = replySkipNext
		}
	default:
		x.w.Error(errSyntax)
	}
}

// applyReplyMode drops what the command just run wrote from offset before
// on, when the mode hides it, and moves SKIP along.
func (c *client) applyReplyMode(before int) {
	if c.w.Len() > before {
		c.w.Truncate(before)
	}
	switch c.replyMode {
	case replySkipNext:
		c.replyMode = replySkipThis
	case replySkipThis:
		c.replyMode = replyOn
	}
}

// opsClientSubcommands are the rows of CLIENT PAUSE, UNPAUSE and REPLY.
func opsClientSubcommands(f command.Flag) []*Command {
	return []*Command{
		{Name: "pause", Docs: "timeout:integer [mode=(WRITE|ALL)]@6.2.0", Arity: -3, Flags: f | command.Admin, Args: "<timeout> [WRITE|ALL]", Since: "3.0.0",
			Summary: "Suspends commands processing.", Handler: clientPause},
		{Name: "unpause", Arity: 2, Flags: f | command.Admin, Since: "6.2.0", Summary: "Resumes processing commands from paused clients.", Handler: clientUnpause},
		{Name: "reply", Docs: "action=(ON|OFF|SKIP)", Arity: 3, Flags: f, Args: "<ON|OFF|SKIP>", Since: "3.2.0", Summary: "Instructs the server whether to reply to commands.", Handler: clientReply},
	}
}
