package server

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// ConfigParam is one configuration parameter: a row of the one table that
// the command-line flags, the --config file and CONFIG GET/SET all read
// (cmd/turnstile registers a flag per row; nothing lists the parameters a
// second time).
//
// A row's default is the value DefaultConfig() holds in the row's field,
// formatted by the row (Default); defaults are not written down twice.
// Values are parsed the same way everywhere, and parse errors are Redis's
// CONFIG SET texts ("argument must be between 1 and 4294967295 inclusive").
//
// Rows are read-only after package initialisation.
type ConfigParam struct {
	Name  string // redis.conf name, lower case: CONFIG GET/SET and the config file
	Flag  string // command-line flag; also accepted in the config file. Usually Name.
	Usage string // one line for --help

	// parse parses v and stores it in c (start-up: flags and the config
	// file; CONFIG SET parses into a scratch Config first). nil: the row
	// is only reported (maxmemory) and has no flag.
	parse func(c *Config, v string) error
	// format formats the value c holds as CONFIG GET prints it.
	format func(c *Config) string
	// get formats the effective value of a running server when that is
	// not simply format(&s.cfg): values CONFIG SET changes, derived ones.
	get func(s *Server) string
	// set makes the value parse stored in c effective on the running
	// server, atomically. nil: the parameter cannot change at run time.
	set func(s *Server, c *Config)
	// check, if set, vets the value parse stored in c against the running
	// server before CONFIG SET applies any value (maxclients against the
	// open files limit); its error refuses the whole CONFIG SET.
	check func(s *Server, c *Config) error
}

// configTable is every parameter, in the order CONFIG GET lists them.
var configTable = []*ConfigParam{
	row("bind", "address to listen on",
		func(c *Config) *string { return &c.Bind }, stringCodec),
	row("port", "TCP port (0: any free port; with tls-port set, no plain TCP)",
		func(c *Config) *int { return &c.Port }, integer[int](0, 65535)),
	row("protected-mode", "yes|no: while there is no password, refuse clients from non-loopback addresses",
		func(c *Config) *bool { return &c.ProtectedMode }, yesNoCodec).
		mutable(func(s *Server) string { return yesNo(s.protectedMode.Load()) },
			func(s *Server, c *Config) { s.protectedMode.Store(c.ProtectedMode) }),
	// TLS (tls.go): the files and settings change at run time (a
	// certificate is rotated with CONFIG SET tls-cert-file ... tls-key-file
	// ..., which reloads them), the port does not.
	row("tls-port", "TLS port (0: none); serves next to the plain port",
		func(c *Config) *int { return &c.TLS.Port }, integer[int](0, 65535)),
	tlsRow("tls-cert-file", "the TLS port's certificate (chain), PEM",
		func(t *TLSConfig) *string { return &t.CertFile }, stringCodec),
	tlsRow("tls-key-file", "the private key of tls-cert-file, PEM",
		func(t *TLSConfig) *string { return &t.KeyFile }, stringCodec),
	tlsRow("tls-ca-cert-file", "CA certificates, PEM, that TLS client certificates must chain to",
		func(t *TLSConfig) *string { return &t.CACertFile }, stringCodec),
	tlsRow("tls-auth-clients", "yes|no|optional: whether TLS clients must present a certificate",
		func(t *TLSConfig) *string { return &t.AuthClients }, tlsAuthClientsCodec),
	tlsRow("tls-protocols", `TLS versions, e.g. "TLSv1.2 TLSv1.3" ("": those two)`,
		func(t *TLSConfig) *string { return &t.Protocols }, stringCodec),
	row("requirepass", `password clients must AUTH with ("": none)`,
		func(c *Config) *string { return &c.RequirePass }, stringCodec).
		mutable(func(s *Server) string { return *s.requirePass.Load() },
			func(s *Server, c *Config) {
				p := c.RequirePass
				s.requirePass.Store(&p)
				s.setDefaultPassword(p)
			}),
	row("aclfile", `file of users ("user <name> <rules>" lines) for ACL LOAD and SAVE ("": none)`,
		func(c *Config) *string { return &c.ACLFile }, stringCodec),
	row("acl-pubsub-default", "channels of a new or reset user: resetchannels (none) or allchannels",
		func(c *Config) *string { return &c.ACLPubsubDefault }, aclPubsubCodec).
		mutable(func(s *Server) string { return pubsubDefaultName(s.acl.allChannels.Load()) },
			func(s *Server, c *Config) { s.acl.allChannels.Store(c.ACLPubsubDefault == "allchannels") }),
	row("acllog-max-len", "entries ACL LOG keeps",
		func(c *Config) *int { return &c.ACLLogMaxLen }, integer[int](0, math.MaxInt64)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.acl.log.max.Load(), 10) },
			func(s *Server, c *Config) { s.acl.log.max.Store(int64(c.ACLLogMaxLen)) }),
	row("maxclients", "maximum simultaneous clients",
		func(c *Config) *int { return &c.MaxClients }, integer[int](1, math.MaxUint32)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.maxClients.Load(), 10) },
			func(s *Server, c *Config) { s.maxClients.Store(int64(c.MaxClients)) }).
		checked(func(s *Server, c *Config) error { return s.checkMaxClients(c.MaxClients) }),
	row("timeout", "seconds a client may stay idle before it is closed (0: for ever)",
		func(c *Config) *int { return &c.Timeout }, integer[int](0, math.MaxInt32)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.idleTimeout.Load(), 10) },
			func(s *Server, c *Config) { s.idleTimeout.Store(int64(c.Timeout)) }),
	outputLimitsRow(),
	row("turnstile-shards", "shards per database (rounded up to a power of two)",
		func(c *Config) *int { return &c.Shards }, integer[int](1, shards.MaxShards)).
		flag("shards").
		effective(func(s *Server) string { return strconv.Itoa(s.dbs[0].NumShards()) }),
	row("databases", "number of databases (SELECT 0..n-1)",
		func(c *Config) *int { return &c.Databases }, integer[int](1, 1024)),
	row("hz", "background task (active expiry) frequency, per second",
		func(c *Config) *int { return &c.Hz }, clamped(integer[int](0, math.MaxInt32), 1, maxHz)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.hz.Load(), 10) },
			func(s *Server, c *Config) { s.hz.Store(int64(c.Hz)) }),
	row("proto-max-bulk-len", "largest bulk string accepted, bytes",
		func(c *Config) *int64 { return &c.Limits.MaxBulkLen }, memory[int64](1, math.MaxInt64)),
	row("client-query-buffer-limit", "largest unprocessed input per client, bytes",
		func(c *Config) *int64 { return &c.Limits.MaxQueryBuf }, memory[int64](1, math.MaxInt64)),
	row("maxmemory", "memory limit in bytes (0: none); see maxmemory-policy",
		func(c *Config) *int64 { return &c.MaxMemory }, memory[int64](0, math.MaxInt64)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.mem.max.Load(), 10) },
			func(s *Server, c *Config) { s.setMemoryConfig(func(m *Config) { m.MaxMemory = c.MaxMemory }) }),
	row("maxmemory-policy", "what happens at maxmemory: noeviction, allkeys-lru|lfu|random, volatile-lru|lfu|random|ttl",
		func(c *Config) *string { return &c.MaxMemoryPolicy }, policyCodec).
		mutable(func(s *Server) string { return s.mem.policy.Load().name },
			func(s *Server, c *Config) {
				s.setMemoryConfig(func(m *Config) { m.MaxMemoryPolicy = c.MaxMemoryPolicy })
			}),
	row("maxmemory-samples", "keys sampled to choose each eviction's victim (at most 64 are used)",
		func(c *Config) *int { return &c.MaxMemorySamples }, integer[int](1, math.MaxInt32)).
		mutable(func(s *Server) string { return strconv.Itoa(int(s.mem.samples.Load())) },
			func(s *Server, c *Config) {
				s.setMemoryConfig(func(m *Config) { m.MaxMemorySamples = c.MaxMemorySamples })
			}),
	row("lfu-log-factor", "LFU counter's logarithm factor (higher: slower counting)",
		func(c *Config) *int { return &c.LFULogFactor }, integer[int](0, math.MaxInt32)).
		mutable(func(s *Server) string { return strconv.Itoa(s.memConfig().LFULogFactor) },
			func(s *Server, c *Config) { s.setMemoryConfig(func(m *Config) { m.LFULogFactor = c.LFULogFactor }) }),
	row("lfu-decay-time", "minutes for the LFU counter to lose one (0: never)",
		func(c *Config) *int { return &c.LFUDecayTime }, integer[int](0, math.MaxInt32)).
		mutable(func(s *Server) string { return strconv.Itoa(s.memConfig().LFUDecayTime) },
			func(s *Server, c *Config) { s.setMemoryConfig(func(m *Config) { m.LFUDecayTime = c.LFUDecayTime }) }),
	row("rl-policies", "file of named rate-limit rules for RL.CHECK, JSON or YAML (\"\": none)",
		func(c *Config) *string { return &c.RLPolicies }, stringCodec).
		flag("policies"),
	row("loglevel", "debug, verbose, notice or warning",
		func(c *Config) *string { return &c.LogLevel }, logLevelCodec).
		mutable(func(s *Server) string { return *s.logLevel.Load() }, (*Server).setLogLevel),
	row("logfile", `log file ("": standard output)`,
		func(c *Config) *string { return &c.LogFile }, stringCodec),
	row("pidfile", `file the process id is written to at start-up ("": none)`,
		func(c *Config) *string { return &c.PidFile }, stringCodec),
	row("daemonize", "yes|no: not supported; yes only warns and the server stays in the foreground",
		func(c *Config) *bool { return &c.Daemonize }, yesNoCodec),
	row("dir", "directory of the snapshot and append-only files",
		func(c *Config) *string { return &c.Persist.Dir }, stringCodec),
	row("dbfilename", "snapshot file name",
		func(c *Config) *string { return &c.Persist.DBFilename }, stringCodec),
	row("save", `snapshot rules "<seconds> <changes> ..." ("": none)`,
		func(c *Config) *[]SaveRule { return &c.Persist.Save }, saveCodec).
		mutable(func(s *Server) string { return FormatSaveRules(s.saveRules()) },
			func(s *Server, c *Config) { r := c.Persist.Save; s.persist.save.Store(&r) }),
	row("stop-writes-on-bgsave-error", "yes|no: refuse writes (MISCONF) while the last background save failed",
		func(c *Config) *bool { return &c.Persist.StopWritesOnBgsaveError }, yesNoCodec).
		mutable(func(s *Server) string { return yesNo(s.persist.stopWrites.Load()) },
			func(s *Server, c *Config) { s.persist.stopWrites.Store(c.Persist.StopWritesOnBgsaveError) }),
	row("appendonly", "yes|no: log every write to the append-only file",
		func(c *Config) *bool { return &c.Persist.AppendOnly }, yesNoCodec).
		mutable(func(s *Server) string { return yesNo(s.persist.aofOn.Load()) }, (*Server).setAppendOnly).
		checked((*Server).checkAppendOnly),
	row("appendfilename", "append-only file base name",
		func(c *Config) *string { return &c.Persist.AppendFilename }, stringCodec),
	row("appendfsync", "always|everysec|no",
		func(c *Config) *persistence.FsyncPolicy { return &c.Persist.AppendFsync }, fsyncCodec).
		mutable(func(s *Server) string { return s.fsyncPolicy().String() }, (*Server).setFsync),
	row("auto-aof-rewrite-percentage", "rewrite the log when it grew by this percentage (0: never)",
		func(c *Config) *int { return &c.Persist.AutoRewritePercentage }, integer[int](0, math.MaxInt32)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.persist.rewritePct.Load(), 10) },
			func(s *Server, c *Config) { s.persist.rewritePct.Store(int64(c.Persist.AutoRewritePercentage)) }),
	row("auto-aof-rewrite-min-size", "smallest log size for an automatic rewrite, bytes",
		func(c *Config) *int64 { return &c.Persist.AutoRewriteMinSize }, memory[int64](0, math.MaxInt64)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.persist.rewriteMin.Load(), 10) },
			func(s *Server, c *Config) { s.persist.rewriteMin.Store(c.Persist.AutoRewriteMinSize) }),
	row("busy-reply-threshold", "milliseconds a script runs before other clients get BUSY",
		func(c *Config) *int64 { return &c.BusyReplyThreshold }, integer[int64](0, math.MaxInt64)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.scripts.threshold.Load(), 10) },
			func(s *Server, c *Config) { s.scripts.threshold.Store(c.BusyReplyThreshold) }),
	row("lua-time-limit", "alias of busy-reply-threshold",
		func(c *Config) *int64 { return &c.BusyReplyThreshold }, integer[int64](0, math.MaxInt64)).
		mutable(func(s *Server) string { return strconv.FormatInt(s.scripts.threshold.Load(), 10) },
			func(s *Server, c *Config) { s.scripts.threshold.Store(c.BusyReplyThreshold) }),
	// operability (ops_config.go)
	slowlogSlowerThanRow, slowlogMaxLenRow, latencyMonitorThresholdRow, latencyTrackingRow,
	row("turnstile-native-scripts", "yes|no: run known limiter scripts natively (no: always in Lua)",
		func(c *Config) *bool { return &c.NativeScripts }, yesNoCodec).
		mutable(func(s *Server) string { return map[bool]string{true: "no", false: "yes"}[s.scripts.noNative.Load()] },
			func(s *Server, c *Config) { s.scripts.noNative.Store(!c.NativeScripts) }),
	row("turnstile-metrics-addr", "serve Prometheus metrics at http://HOST:PORT/metrics (\"\": none)",
		func(c *Config) *string { return &c.MetricsAddr }, stringCodec).
		flag("metrics-addr"),
	row("turnstile-hotkeys", "yes|no: count limiter calls per key for RL.HOTKEYS",
		func(c *Config) *bool { return &c.HotKeys }, yesNoCodec).
		mutable(func(s *Server) string { return yesNo(s.hot.on.Load()) },
			func(s *Server, c *Config) { s.hot.on.Store(c.HotKeys) }),
	row("enable-debug-command", "no|yes|local: who may run DEBUG (local: loopback clients)",
		func(c *Config) *string { return &c.EnableDebugCommand }, enumCodec("no", "yes", "local")),
	row("turnstile-watch-max-keys", "most keys one connection may WATCH",
		func(c *Config) *int { return &c.MaxWatchedKeys }, integer[int](1, math.MaxInt32)),
	row("turnstile-multi-max-commands", "most commands one MULTI may queue",
		func(c *Config) *int { return &c.MaxQueuedCommands }, integer[int](1, math.MaxInt32)),
	row("turnstile-multi-max-bytes", "most argument bytes one MULTI may queue",
		func(c *Config) *int64 { return &c.MaxQueuedBytes }, memory[int64](1, math.MaxInt64)),
}

// protectedConfigs are the rows Redis 7 protects (enable-protected-configs
// no, its default): CONFIG SET refuses them with "can't set protected
// config", so that a client cannot make the server write its snapshot to
// a file of its choosing.
var protectedConfigs = map[string]bool{"dir": true, "dbfilename": true}

// configByName finds rows by Name, and by Flag for LookupConfigParam.
var configByName, configByFlag = func() (map[string]*ConfigParam, map[string]*ConfigParam) {
	byName := make(map[string]*ConfigParam, len(configTable))
	byFlag := make(map[string]*ConfigParam, len(configTable))
	for _, p := range configTable {
		if p.Name != strings.ToLower(p.Name) || byName[p.Name] != nil || p.format == nil {
			panic("config table: bad or duplicate row " + p.Name)
		}
		byName[p.Name] = p
		if p.parse != nil {
			if byFlag[p.Flag] != nil {
				panic("config table: duplicate flag " + p.Flag)
			}
			byFlag[p.Flag] = p
		}
	}
	return byName, byFlag
}()

// ConfigParams returns the table's rows in CONFIG GET's order. The rows
// are shared and must not be modified.
func ConfigParams() []*ConfigParam { return append([]*ConfigParam(nil), configTable...) }

// LookupConfigParam finds the settable row a config-file directive or a
// flag names: by Name or by Flag (shards for turnstile-shards), case
// folded. nil if there is none.
func LookupConfigParam(name string) *ConfigParam {
	name = strings.ToLower(name)
	if p := configByFlag[name]; p != nil {
		return p
	}
	if p := configByName[name]; p != nil && p.parse != nil {
		return p
	}
	return nil
}

// Settable reports whether the row can be given at start-up (flag, file).
func (p *ConfigParam) Settable() bool { return p.parse != nil }

// Mutable reports whether CONFIG SET can change the row at run time.
func (p *ConfigParam) Mutable() bool { return p.set != nil }

// Parse parses v and stores it in c.
func (p *ConfigParam) Parse(c *Config, v string) error {
	if p.parse == nil {
		return errImmutable
	}
	return p.parse(c, v)
}

// Format formats the value c holds, as CONFIG GET prints it.
func (p *ConfigParam) Format(c *Config) string { return p.format(c) }

// Default formats DefaultConfig()'s value.
func (p *ConfigParam) Default() string {
	c := DefaultConfig()
	return p.format(&c)
}

// Get formats the running server's effective value (CONFIG GET).
func (p *ConfigParam) Get(s *Server) string {
	if p.get != nil {
		return p.get(s)
	}
	return p.format(&s.cfg)
}

// row builds the row of a parameter held in one Config field of type T.
func row[T any](name, usage string, field func(*Config) *T, cd codec[T]) *ConfigParam {
	return &ConfigParam{
		Name: name, Flag: name, Usage: usage,
		parse: func(c *Config, v string) error {
			x, err := cd.parse(v)
			if err != nil {
				return err
			}
			*field(c) = x
			return nil
		},
		format: func(c *Config) string { return cd.format(*field(c)) },
	}
}

// flag names the row's command-line flag when it differs from Name.
func (p *ConfigParam) flag(name string) *ConfigParam { p.Flag = name; return p }

// effective sets how a running server reports the value.
func (p *ConfigParam) effective(get func(*Server) string) *ConfigParam { p.get = get; return p }

// mutable makes the row settable at run time: set stores atomically what
// get reads.
func (p *ConfigParam) mutable(get func(*Server) string, set func(*Server, *Config)) *ConfigParam {
	p.get, p.set = get, set
	return p
}

// checked sets the row's check (see ConfigParam.check).
func (p *ConfigParam) checked(check func(*Server, *Config) error) *ConfigParam {
	p.check = check
	return p
}

// configError is a CONFIG SET failure reason, in Redis's words.
type configError string

func (e configError) Error() string { return string(e) }

const (
	errNotInteger     = configError("argument couldn't be parsed into an integer")
	errNotMemory      = configError("argument must be a memory value")
	errNotYesNo       = configError("argument must be 'yes' or 'no'")
	errImmutable      = configError("can't set immutable config")
	errProtected      = configError("can't set protected config")
	errDuplicateParam = configError("duplicate parameter")
)

func rangeError(lo, hi int64) error {
	return configError(fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi))
}

func oneOfError(names ...string) error {
	return configError("argument(s) must be one of the following: " + strings.Join(names, ", "))
}

// enumCodec is one of names, in any case; CONFIG GET prints it lower case.
func enumCodec(names ...string) codec[string] {
	return codec[string]{
		parse: func(v string) (string, error) {
			for _, n := range names {
				if strings.EqualFold(v, n) {
					return n, nil
				}
			}
			return "", oneOfError(names...)
		},
		format: func(v string) string { return v },
	}
}

// codec parses and formats the values of one type.
type codec[T any] struct {
	parse  func(string) (T, error)
	format func(T) string
}

var stringCodec = codec[string]{
	parse:  func(v string) (string, error) { return v, nil },
	format: func(v string) string { return v },
}

// integer is a decimal integer in lo..hi.
func integer[T ~int | ~int64](lo, hi int64) codec[T] {
	return codec[T]{
		parse: func(v string) (T, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, errNotInteger
			}
			return inRange[T](n, lo, hi)
		},
		format: func(v T) string { return strconv.FormatInt(int64(v), 10) },
	}
}

// clamped is cd with values outside lo..hi brought to the nearest bound,
// as Redis does for hz (0 is 1, 1000 is 500).
func clamped[T ~int | ~int64](cd codec[T], lo, hi T) codec[T] {
	return codec[T]{
		parse: func(v string) (T, error) {
			n, err := cd.parse(v)
			return min(max(n, lo), hi), err
		},
		format: cd.format,
	}
}

// maxHz is Redis's CONFIG_MAX_HZ: a larger hz is taken as this.
const maxHz = 500

// memory is a byte count in lo..hi, with redis.conf's units (ParseMemory).
// It prints plain bytes, as Redis's CONFIG GET does.
func memory[T ~int | ~int64](lo, hi int64) codec[T] {
	return codec[T]{
		parse: func(v string) (T, error) {
			n, err := ParseMemory(v)
			if errors.Is(err, errMemoryOverflow) {
				return 0, rangeError(lo, hi)
			}
			if err != nil {
				return 0, errNotMemory
			}
			return inRange[T](n, lo, hi)
		},
		format: func(v T) string { return strconv.FormatInt(int64(v), 10) },
	}
}

func inRange[T ~int | ~int64](n, lo, hi int64) (T, error) {
	if n < lo || n > hi || int64(T(n)) != n {
		return 0, rangeError(lo, hi)
	}
	return T(n), nil
}

var errMemoryOverflow = errors.New("memory value out of range")

// memoryUnits are redis.conf's: k, m, g are powers of 1000, kb, mb, gb of
// 1024; b or none is bytes. Case does not matter.
var memoryUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1000, "kb": 1 << 10,
	"m": 1000 * 1000, "mb": 1 << 20,
	"g": 1000 * 1000 * 1000, "gb": 1 << 30,
}

// ParseMemory parses a byte count as redis.conf writes it: decimal digits
// and an optional unit ("1048576", "512kb", "64mb", "1g"). Signs, spaces
// and fractions are rejected, as Redis does.
func ParseMemory(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	mul, ok := memoryUnits[strings.ToLower(s[i:])]
	if i == 0 || !ok {
		return 0, fmt.Errorf("%q is not a memory value (bytes, or a number with k, kb, m, mb, g or gb)", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > math.MaxInt64/mul {
		return 0, fmt.Errorf("%q: %w", s, errMemoryOverflow)
	}
	return n * mul, nil
}

var yesNoCodec = codec[bool]{
	parse: func(v string) (bool, error) {
		switch strings.ToLower(v) {
		case "yes":
			return true, nil
		case "no":
			return false, nil
		}
		return false, errNotYesNo
	},
	format: yesNo,
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

var fsyncCodec = codec[persistence.FsyncPolicy]{
	parse: func(v string) (persistence.FsyncPolicy, error) {
		p, err := persistence.ParseFsyncPolicy(v)
		if err != nil {
			return 0, oneOfError("everysec", "always", "no")
		}
		return p, nil
	},
	format: persistence.FsyncPolicy.String,
}

var saveCodec = codec[[]SaveRule]{parse: ParseSaveRules, format: FormatSaveRules}

// logLevels are redis.conf's loglevel names with the slog level the binary
// logs at; info and warn are accepted for notice and warning.
var logLevels = []struct {
	name  string
	level slog.Level
}{{"debug", slog.LevelDebug}, {"verbose", slog.LevelInfo}, {"notice", slog.LevelInfo}, {"warning", slog.LevelWarn}}

var logLevelAliases = map[string]string{"info": "notice", "warn": "warning"}

var aclPubsubCodec = codec[string]{
	parse: func(v string) (string, error) {
		if v = strings.ToLower(v); v == "allchannels" || v == "resetchannels" {
			return v, nil
		}
		return "", oneOfError("allchannels", "resetchannels")
	},
	format: func(v string) string { return pubsubDefaultName(v == "allchannels") },
}

func pubsubDefaultName(all bool) string {
	if all {
		return "allchannels"
	}
	return "resetchannels"
}

var logLevelCodec = codec[string]{
	parse: func(v string) (string, error) {
		v = strings.ToLower(v)
		if a, ok := logLevelAliases[v]; ok {
			v = a
		}
		for _, l := range logLevels {
			if l.name == v {
				return v, nil
			}
		}
		return "", oneOfError("debug", "verbose", "notice", "warning")
	},
	format: func(v string) string {
		if v == "" {
			return "notice"
		}
		return v
	},
}

// SlogLevel is the slog level of c.LogLevel: what the binary's logger
// passes. An unset or unknown level is notice (slog's Info).
func (c *Config) SlogLevel() slog.Level {
	for _, l := range logLevels {
		if l.name == c.LogLevel {
			return l.level
		}
	}
	return slog.LevelInfo
}

// setLogLevel is CONFIG SET loglevel: the name CONFIG GET reports, and the
// level of the binary's logger when it passed its LevelVar.
func (s *Server) setLogLevel(c *Config) {
	name := logLevelCodec.format(c.LogLevel)
	s.logLevel.Store(&name)
	if s.cfg.LogLevelVar != nil {
		s.cfg.LogLevelVar.Set(c.SlogLevel())
	}
}
