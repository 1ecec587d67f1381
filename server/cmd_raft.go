package server

import "github.com/turnstile/turnstile/command"

// The cluster's admin commands, with RedisRaft's names: RAFT.INFO,
// RAFT.CLUSTER INIT|JOIN, RAFT.NODE ADD|REMOVE. The server only checks
// arity and hands the whole request to Replication.Admin (args[0] is the
// command's name as the client sent it); they are node-local, never
// forwarded (the cluster reaches its leader itself when a change needs
// it). Without replication they fail with errNotCluster.

const errNotCluster = "ERR this server is not a cluster node (start it with --node-id)"

func raftCommands() []*Command {
	const f = command.Admin | command.NoScript | command.Loading | command.Stale
	help := func() *Command {
		return &Command{Name: "help", Arity: 2, Flags: command.Loading | command.Stale, Since: "0.1.0",
			Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp}
	}
	return []*Command{
		{Name: "raft.info", Arity: -1, Flags: f, Group: "cluster", Since: "0.1.0",
			Summary: "Returns the Raft state of this node.", Handler: cmdRaft},
		{Name: "raft.cluster", Arity: -2, Group: "cluster", Since: "0.1.0",
			Summary: "A container for cluster creation commands.", Subs: []*Command{
				{Name: "init", Arity: -2, Flags: f, Args: "[<cluster-id>]", Since: "0.1.0",
					Summary: "Creates a new cluster with this node as its only member.", Handler: cmdRaft},
				{Name: "join", Arity: -3, Flags: f, Args: "<host:port> [<host:port> ...]", Since: "0.1.0",
					Summary: "Joins an existing cluster through the RESP address of one of its members.", Handler: cmdRaft},
				help(),
			}},
		{Name: "raft.node", Arity: -2, Group: "cluster", Since: "0.1.0",
			Summary: "A container for cluster membership commands.", Subs: []*Command{
				{Name: "add", Arity: 5, Flags: f, Args: "<node-id> <raft-addr> <resp-addr>", Since: "0.1.0",
					Summary: "Adds a node to the cluster.", Handler: cmdRaft},
				{Name: "remove", Arity: 3, Flags: f, Args: "<node-id>", Since: "0.1.0",
					Summary: "Removes a node from the cluster.", Handler: cmdRaft},
				help(),
			}},
	}
}

// cmdRaft runs a RAFT.* command through the node's Replication.
func cmdRaft(x *Ctx) {
	if x.s.repl == nil {
		x.w.Error(errNotCluster)
		return
	}
	r := x.s.repl.Admin(x.args)
	switch {
	case r.Err != "":
		x.w.Error(r.Err)
	case r.Bulk:
		x.w.BulkString(r.Status)
	default:
		x.w.Status(r.Status)
	}
}
