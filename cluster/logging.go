package cluster

import (
	"bytes"
	"io"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hclogTo returns an hclog.Logger (what hashicorp/raft logs through) that
// writes each of its lines to log, at log's level for the line's level.
func hclogTo(log *slog.Logger, name string) hclog.Logger {
	level := hclog.Info
	if log.Enabled(nil, slog.LevelDebug) {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:            name,
		Level:           level,
		Output:          lineWriter{log},
		DisableTime:     true,
		IncludeLocation: false,
	})
}

// lineWriter passes hclog's formatted lines to slog.
type lineWriter struct{ log *slog.Logger }

func (w lineWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	switch {
	case bytes.Contains(p, []byte("[ERROR]")):
		w.log.Error(line)
	case bytes.Contains(p, []byte("[WARN]")):
		w.log.Warn(line)
	case bytes.Contains(p, []byte("[DEBUG]")), bytes.Contains(p, []byte("[TRACE]")):
		w.log.Debug(line)
	default:
		w.log.Info(line)
	}
	return len(p), nil
}

var _ io.Writer = lineWriter{}
