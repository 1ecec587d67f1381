package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/turnstile/turnstile/resp"
)

// A config file is redis.conf's format: one directive a line, its words
// split as Redis splits them (SplitConfigLine), '#' starting a comment
// line, "include <path-or-glob>" reading another file in place. The rows
// of configTable are applied; the directives of Redis that have no meaning
// here (ignoredDirectives) are accepted and reported once each so that the
// caller can warn; anything else is an error naming the file and the line.

// ConfigDirective is one directive line of a config file.
type ConfigDirective struct {
	File string   // the file it was read from
	Line int      // 1-based line number in File
	Text string   // the line, trimmed (for error messages)
	Args []string // the words; Args[0] is the directive's name, lower case
}

// Name is the directive's name, lower case.
func (d ConfigDirective) Name() string { return d.Args[0] }

// ConfigFileError is a bad line of a config file, reported as Redis does
// (with the file name added): the caller prints it and does not start.
type ConfigFileError struct {
	File string
	Line int
	Text string
	Msg  string
}

func (e *ConfigFileError) Error() string {
	return fmt.Sprintf("\n*** FATAL CONFIG FILE ERROR (Turnstile %s) ***\nReading the configuration file %s, at line %d\n>>> '%s'\n%s",
		TurnstileVersion, e.File, e.Line, e.Text, e.Msg)
}

func (d ConfigDirective) fail(msg string) error {
	return &ConfigFileError{File: d.File, Line: d.Line, Text: d.Text, Msg: msg}
}

// maxIncludeDepth bounds nested includes, so that a file including itself
// fails instead of recursing for ever.
const maxIncludeDepth = 16

// ReadConfigFile reads the directives of the config file at path, with the
// files its include lines name read in their place (a relative include
// path is relative to the working directory, as in Redis; a pattern with
// wildcards includes every match, in name order).
func ReadConfigFile(path string) ([]ConfigDirective, error) {
	var out []ConfigDirective
	err := readConfigFile(path, 0, &out)
	return out, err
}

func readConfigFile(path string, depth int, out *[]ConfigDirective) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	dirs, err := ParseConfig(path, string(data))
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if d.Name() != "include" {
			*out = append(*out, d)
			continue
		}
		if len(d.Args) != 2 {
			return d.fail("wrong number of arguments")
		}
		if depth+1 >= maxIncludeDepth {
			return d.fail("includes nested too deeply (does a file include itself?)")
		}
		files, err := filepath.Glob(d.Args[1])
		if err != nil {
			return d.fail("bad include pattern: " + err.Error())
		}
		if len(files) == 0 && !hasGlobMeta(d.Args[1]) {
			files = []string{d.Args[1]} // let the read report the missing file
		}
		for _, f := range files {
			if err := readConfigFile(f, depth+1, out); err != nil {
				if _, ok := err.(*ConfigFileError); ok {
					return err
				}
				return d.fail(err.Error())
			}
		}
	}
	return nil
}

func hasGlobMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// ParseConfig splits the text of a config file (named file in errors) into
// its directive lines, without applying them or following includes.
func ParseConfig(file, text string) ([]ConfigDirective, error) {
	var dirs []ConfigDirective
	for i, line := range strings.Split(text, "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		d := ConfigDirective{File: file, Line: i + 1, Text: line}
		args, err := SplitConfigLine(line)
		if err != nil {
			return nil, d.fail("Unbalanced quotes in configuration line")
		}
		if len(args) == 0 {
			continue
		}
		args[0] = strings.ToLower(args[0])
		d.Args = args
		dirs = append(dirs, d)
	}
	return dirs, nil
}

var errUnbalancedQuotes = errors.New("unbalanced quotes")

// SplitConfigLine splits a line into words as Redis does (redis-cli and
// redis.conf use sdssplitargs, as inline requests do: resp.SplitArgs):
// words are separated by white space; a double-quoted part takes the
// escapes \n \r \t \b \a \xHH and \<any> (that character); a
// single-quoted part takes only \'; its closing quote must be followed by
// white space or the end of the line.
func SplitConfigLine(line string) ([]string, error) {
	args, _, err := resp.SplitArgs([]byte(line), nil, nil)
	if err != nil {
		return nil, errUnbalancedQuotes
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out, nil
}

// multiWordDirectives are the rows whose value may span several words on a
// config file line (joined with single spaces, as CONFIG SET takes them in
// one argument). Every other row takes exactly one word.
var multiWordDirectives = map[string]bool{"save": true, "bind": true, "client-output-buffer-limit": true}

// unsupportedDirectives are Redis directives that change what clients see
// and that Turnstile cannot honour: accepting them silently would be
// wrong, so a file using them is refused with the reason.
var unsupportedDirectives = map[string]string{
	"rename-command": "rename-command is not supported: Turnstile cannot rename or hide commands (use requirepass)",
	"loadmodule":     "loadmodule is not supported: Turnstile has no module API",
	"replicaof":      "replicaof is not supported: Turnstile replicates with Raft (see --join in --help)",
	"slaveof":        "slaveof is not supported: Turnstile replicates with Raft (see --join in --help)",
	"unixsocket":     "unixsocket is not supported: Turnstile listens on TCP only",
	"sentinel":       "sentinel directives are not supported",
}

// ignoredDirectives are Redis 7 directives that have no meaning for
// Turnstile (tuning of Redis's encodings, threads, replication, cluster
// bus, process management, ...). A file may use them: each is reported
// once, and its value is not checked. A row of configTable of the same
// name takes precedence.
var ignoredDirectives = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`
		active-defrag-cycle-max active-defrag-cycle-min
		active-defrag-ignore-bytes active-defrag-max-scan-fields active-defrag-threshold-lower
		active-defrag-threshold-upper active-expire-effort activedefrag activerehashing always-show-logo
		aof-disable-auto-gc aof-load-truncated aof-rewrite-incremental-fsync aof-timestamp-enabled
		aof-use-rdb-preamble aof_rewrite_cpulist appenddirname bgsave_cpulist bind-source-addr bio_cpulist
		cluster-allow-pubsubshard-when-down cluster-allow-reads-when-down cluster-allow-replica-migration
		cluster-announce-bus-port cluster-announce-hostname cluster-announce-human-nodename cluster-announce-ip
		cluster-announce-port cluster-announce-tls-port cluster-config-file cluster-enabled
		cluster-link-sendbuf-limit cluster-migration-barrier cluster-node-timeout cluster-port
		cluster-preferred-endpoint-type cluster-replica-no-failover cluster-replica-validity-factor
		cluster-require-full-coverage cluster-slave-no-failover cluster-slave-validity-factor
		crash-log-enabled crash-memcheck-enabled disable-thp dynamic-hz
		enable-module-command enable-protected-configs hash-max-listpack-entries hash-max-listpack-value
		hash-max-ziplist-entries hash-max-ziplist-value hll-sparse-max-bytes ignore-warnings io-threads
		io-threads-do-reads jemalloc-bg-thread
		latency-tracking-info-percentiles lazyfree-lazy-eviction lazyfree-lazy-expire
		lazyfree-lazy-server-del lazyfree-lazy-user-del lazyfree-lazy-user-flush list-compress-depth
		list-max-listpack-size list-max-ziplist-size list-max-ziplist-entries list-max-ziplist-value
		locale-collate lua-replicate-commands masterauth masteruser maxmemory-clients
		maxmemory-eviction-tenacity min-replicas-max-lag min-replicas-to-write min-slaves-max-lag
		min-slaves-to-write no-appendfsync-on-rewrite notify-keyspace-events oom-score-adj
		oom-score-adj-values proc-title-template propagation-error-behavior
		rdb-del-sync-files rdb-key-save-delay rdb-save-incremental-fsync rdbchecksum rdbcompression
		repl-backlog-size repl-backlog-ttl repl-disable-tcp-nodelay repl-diskless-load repl-diskless-sync
		repl-diskless-sync-delay repl-diskless-sync-max-replicas repl-ping-replica-period
		repl-ping-slave-period repl-timeout replica-announce-ip replica-announce-port replica-announced
		replica-ignore-disk-write-errors replica-ignore-maxmemory replica-lazy-flush replica-priority
		replica-read-only replica-serve-stale-data sanitize-dump-payload server_cpulist
		set-max-intset-entries set-max-listpack-entries set-max-listpack-value set-proc-title
		shutdown-on-sigint shutdown-on-sigterm shutdown-timeout slave-announce-ip slave-announce-port
		slave-ignore-maxmemory slave-lazy-flush slave-priority slave-read-only slave-serve-stale-data
		socket-mark-id stream-node-max-bytes
		stream-node-max-entries supervised syslog-enabled syslog-facility syslog-ident tcp-backlog
		tcp-keepalive tracking-table-max-keys unixsocketperm watchdog-period zset-max-listpack-entries
		zset-max-listpack-value zset-max-ziplist-entries zset-max-ziplist-value`) {
		m[n] = true
	}
	return m
}()

// IgnoredDirective is a directive of the file that has no effect here:
// where it first appears.
type IgnoredDirective struct {
	Name string
	File string
	Line int
}

// ApplyConfig applies config file directives to c in order. A directive
// that names a row sets it (a later line wins, except that save lines
// accumulate: the first one replaces the defaults, each later one adds its
// rules, and save "" clears them). Otherwise other, when not nil, is asked
// (the binary's own settings); it reports whether it knew the name. Then
// the directives of ignoredDirectives are accepted and returned, each
// once, in the order they first appear. Anything else, or a bad value, is
// a *ConfigFileError.
func ApplyConfig(dirs []ConfigDirective, c *Config, other func(name string, args []string) (bool, error)) ([]IgnoredDirective, error) {
	var ignored []IgnoredDirective
	seen := map[string]bool{}
	saveSeen := false
	for _, d := range dirs {
		name, args := d.Name(), d.Args[1:]
		if p := LookupConfigParam(name); p != nil {
			if len(args) == 0 || len(args) > 1 && !multiWordDirectives[p.Name] {
				return ignored, d.fail("wrong number of arguments")
			}
			value := strings.Join(args, " ")
			if p.Name == "save" {
				rules, err := ParseSaveRules(value)
				if err != nil {
					return ignored, d.fail("Invalid save parameters")
				}
				if !saveSeen || len(rules) == 0 {
					c.Persist.Save = nil
				}
				saveSeen = true
				c.Persist.Save = append(c.Persist.Save, rules...)
				continue
			}
			if err := p.Parse(c, value); err != nil {
				return ignored, d.fail(err.Error())
			}
			continue
		}
		if other != nil {
			ok, err := other(name, args)
			if err != nil {
				return ignored, d.fail(err.Error())
			}
			if ok {
				continue
			}
		}
		if msg, ok := unsupportedDirectives[name]; ok {
			return ignored, d.fail(msg)
		}
		if !ignoredDirectives[name] {
			return ignored, d.fail("Bad directive or wrong number of arguments")
		}
		if !seen[name] {
			seen[name] = true
			ignored = append(ignored, IgnoredDirective{Name: name, File: d.File, Line: d.Line})
		}
	}
	return ignored, nil
}

// MultiWordParam reports whether row p's value may be given as several
// words (save, bind, client-output-buffer-limit).
func MultiWordParam(p *ConfigParam) bool { return multiWordDirectives[p.Name] }

// IgnoredDirectiveName reports whether name (any case) is a Redis
// directive that has no effect here and is not a row.
func IgnoredDirectiveName(name string) bool {
	name = strings.ToLower(name)
	return ignoredDirectives[name] && LookupConfigParam(name) == nil
}
