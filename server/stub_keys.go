package server

// Placeholder until the key commands land (cmd_keys.go).
func keyCommands() []*Command { return nil }
