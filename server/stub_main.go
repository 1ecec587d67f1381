package server

// Placeholders owned by the lead.
func throttleCommands() []*Command { return nil }
func cmdCommand(x *Ctx)            { x.w.Array(0) }
func cmdInfo(x *Ctx)               { x.w.Verbatim("# Server\r\nredis_version:" + Version + "\r\n") }
