package server

// Placeholder until the string commands land (cmd_strings.go).
func stringCommands() []*Command { return nil }
