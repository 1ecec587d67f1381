package server

import (
	"strconv"
	"strings"

	"github.com/turnstile/turnstile/persistence"
)

// PersistConfig holds the durability settings (redis.conf names).
type PersistConfig struct {
	Dir            string                  // dir: where the files live
	DBFilename     string                  // dbfilename: the snapshot file
	Save           []SaveRule              // save: snapshot after Seconds if Changes changes; none = no automatic snapshots
	AppendOnly     bool                    // appendonly
	AppendFilename string                  // appendfilename: base name of the log files
	AppendFsync    persistence.FsyncPolicy // appendfsync
	// auto-aof-rewrite-percentage and -min-size: rewrite the log when it
	// has grown by this percentage since the last rewrite and is at least
	// this big. Percentage 0 disables automatic rewrites.
	AutoRewritePercentage int
	AutoRewriteMinSize    int64
	// StopWritesOnBgsaveError (stop-writes-on-bgsave-error): while the
	// last background save failed and save rules exist, commands that
	// write are refused with MISCONF, until a snapshot succeeds.
	StopWritesOnBgsaveError bool
	FS                      persistence.FS // nil: the real file system (tests substitute one)
}

// SaveRule is one "seconds changes" pair of the save setting.
type SaveRule struct {
	Seconds int64
	Changes int64
}

// DefaultPersistConfig is Redis's defaults, with no automatic snapshot
// rules (the binary turns Redis's default rules on; embedded servers and
// tests do not write files unless asked).
func DefaultPersistConfig() PersistConfig {
	return PersistConfig{
		Dir:                   ".",
		DBFilename:            "dump.tsr",
		AppendFilename:        "appendonly.aof",
		AppendFsync:           persistence.FsyncEverySec,
		AutoRewritePercentage: 100,
		AutoRewriteMinSize:    64 << 20,

		StopWritesOnBgsaveError: true,
	}
}

// DefaultSaveRules are redis.conf's: "3600 1 300 100 60 10000".
var DefaultSaveRules = []SaveRule{{3600, 1}, {300, 100}, {60, 10000}}

// errInvalidSave is Redis's reason for a bad save value (CONFIG SET and
// the config file): pairs of <seconds> (at least 1) <changes> (at least 0).
const errInvalidSave = configError("Invalid save parameters")

// ParseSaveRules parses a save setting such as "3600 1 300 100"; "" means
// no rules.
func ParseSaveRules(s string) ([]SaveRule, error) {
	f := strings.Fields(s)
	if len(f)%2 != 0 {
		return nil, errInvalidSave
	}
	var rules []SaveRule
	for i := 0; i < len(f); i += 2 {
		sec, err1 := strconv.ParseInt(f[i], 10, 64)
		ch, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || sec < 1 || ch < 0 {
			return nil, errInvalidSave
		}
		rules = append(rules, SaveRule{Seconds: sec, Changes: ch})
	}
	return rules, nil
}

// FormatSaveRules is the inverse of ParseSaveRules (CONFIG GET save).
func FormatSaveRules(rules []SaveRule) string {
	parts := make([]string, 0, 2*len(rules))
	for _, r := range rules {
		parts = append(parts, strconv.FormatInt(r.Seconds, 10), strconv.FormatInt(r.Changes, 10))
	}
	return strings.Join(parts, " ")
}
