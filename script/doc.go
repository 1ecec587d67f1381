// Package script runs Redis Lua scripts (EVAL, EVALSHA, EVAL_RO,
// EVALSHA_RO, SCRIPT) on gopher-lua, a Lua 5.1 interpreter like Redis's.
//
// The package knows nothing of the server: it reaches the keyspace only
// through a Host, which looks commands up in the command table (for the
// checks Redis makes before a script's redis.call: unknown command, arity,
// noscript, writes from a read-only script) and runs them inside the
// script's execution. The server decides what an execution is (one now,
// the locks, the effects); this package decides what Lua sees.
//
// # What a script sees
//
//   - The globals of Redis 7.0's sandbox: the base library without the
//     file and environment functions, string, table, math, coroutine,
//     redis, cjson, cmsgpack, bit and struct, KEYS and ARGV. The globals
//     and every library table are read-only: assigning one fails with
//     "Attempt to modify a readonly table", reading an unset global with
//     "Script attempted to access nonexistent global variable".
//   - redis.call and redis.pcall convert replies as Redis does (RESP2 by
//     default, RESP3 after redis.setresp(3)); the script's return value is
//     converted back the same way (reply.go, lua2resp.go).
//   - Errors keep Redis's formats: a raised error reaches the client as
//     "<code> <message> script: <sha>, on @user_script:<line>.".
//
// # Invariants and locking
//
//   - An Engine holds one Lua state. It is not safe for concurrent use:
//     the server runs one script at a time (its script lock), as Redis
//     does. Only Kill, Stop, Running, Exists and Cached may be called from
//     other goroutines.
//   - Natives (native.go) are Go implementations of well-known scripts,
//     recognised by SHA1: they send the script's own commands through a
//     Caller, so their effects and replies are the script's, and need
//     neither the Lua state nor the script lock.
//   - Compiled scripts are cached by SHA1: scripts loaded by SCRIPT LOAD
//     stay until SCRIPT FLUSH; scripts cached by EVAL are bounded (the
//     least recently used beyond maxEvalScripts are dropped, as Redis 7.4
//     does), so a client sending ever-new script texts cannot grow memory
//     without bound.
//   - A script runs under a context that SCRIPT KILL cancels; the
//     interpreter checks it between instructions. Kill refuses once the
//     script has called a write command (UNKILLABLE), so a killed script
//     never leaves half its writes behind.
package script
