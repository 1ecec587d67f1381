package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"
)

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// quietConfig is DefaultConfig with 16 shards and the logs discarded, for
// servers that are built but never serve (New does no I/O).
func quietConfig() Config {
	c := DefaultConfig()
	c.Shards = 16
	c.Logger = discardLogger
	return c
}

// TestConfigTableDefaultsRoundTrip: for every row, parsing the value a
// server built from DefaultConfig reports gives back DefaultConfig's
// value (the whole Config is unchanged), and Default agrees with Get.
func TestConfigTableDefaultsRoundTrip(t *testing.T) {
	def := quietConfig() // 16 shards: a power of two, so effective and configured counts agree
	s, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ConfigParams() {
		got := p.Get(s)
		if f := p.Format(&def); f != got {
			t.Errorf("%s: Format(DefaultConfig) = %q, Get = %q", p.Name, f, got)
		}
		if !p.Settable() {
			continue
		}
		c := def
		if err := p.Parse(&c, got); err != nil {
			t.Errorf("%s: Parse(%q): %v", p.Name, got, err)
			continue
		}
		if !reflect.DeepEqual(c, def) {
			t.Errorf("%s: Parse(%q) changed the config", p.Name, got)
		}
		// Parsing into a zero Config stores the same value.
		var z Config
		if err := p.Parse(&z, got); err != nil || p.Format(&z) != got {
			t.Errorf("%s: Parse(%q) into a zero Config gives %q, %v", p.Name, got, p.Format(&z), err)
		}
	}
}

// configCases are, per settable row, values to accept (with the value
// CONFIG GET then reports) and values to refuse (with a part of the error).
var configCases = map[string]struct {
	good [][2]string // input, canonical form
	bad  [][2]string // input, error substring
}{
	"bind":        {good: [][2]string{{"0.0.0.0", "0.0.0.0"}, {"::1", "::1"}}},
	"requirepass": {good: [][2]string{{"s3cret", "s3cret"}, {"", ""}}},
	"aclfile":     {good: [][2]string{{"/dev/null", "/dev/null"}, {"", ""}}},
	"acl-pubsub-default": {good: [][2]string{{"allchannels", "allchannels"}, {"RESETCHANNELS", "resetchannels"}},
		bad: [][2]string{{"x", "must be one of the following: allchannels, resetchannels"}}},
	"acllog-max-len": {good: [][2]string{{"0", "0"}, {"128", "128"}, {"9223372036854775807", "9223372036854775807"}},
		bad: [][2]string{{"-1", "between 0 and 9223372036854775807 inclusive"}, {"x", "couldn't be parsed into an integer"}}},
	"port": {good: [][2]string{{"7000", "7000"}, {"0", "0"}, {"65535", "65535"}},
		bad: [][2]string{{"65536", "between 0 and 65535"}, {"-1", "between 0 and 65535"}, {"x", "couldn't be parsed into an integer"}, {"6kb", "integer"}}},
	"protected-mode": {good: [][2]string{{"no", "no"}, {"YES", "yes"}},
		bad: [][2]string{{"maybe", "argument must be 'yes' or 'no'"}}},
	// A tls-port other than 0 needs certificate files (TestTLSStartupErrors).
	"tls-port": {good: [][2]string{{"0", "0"}},
		bad: [][2]string{{"65536", "between 0 and 65535"}, {"x", "integer"}}},
	"tls-cert-file":    {good: [][2]string{{"/etc/turnstile/tls.crt", "/etc/turnstile/tls.crt"}, {"", ""}}},
	"tls-key-file":     {good: [][2]string{{"/etc/turnstile/tls.key", "/etc/turnstile/tls.key"}}},
	"tls-ca-cert-file": {good: [][2]string{{"/etc/turnstile/ca.crt", "/etc/turnstile/ca.crt"}}},
	"tls-auth-clients": {good: [][2]string{{"YES", "yes"}, {"optional", "optional"}, {"no", "no"}},
		bad: [][2]string{{"maybe", "argument(s) must be one of the following: no, yes, optional"}, {"", "one of the following"}}},
	// Checked when TLS is in use (TestTLSProtocols), as Redis does.
	"tls-protocols": {good: [][2]string{{"TLSv1.2 TLSv1.3", "TLSv1.2 TLSv1.3"}, {"", ""}}},
	"maxclients": {good: [][2]string{{"1", "1"}, {"4294967295", "4294967295"}},
		bad: [][2]string{{"0", "between 1 and 4294967295 inclusive"}, {"abc", "couldn't be parsed into an integer"}, {"", "integer"}}},
	"timeout": {good: [][2]string{{"0", "0"}, {"300", "300"}, {"2147483647", "2147483647"}},
		bad: [][2]string{{"-1", "between 0 and 2147483647 inclusive"}, {"2147483648", "between 0 and 2147483647 inclusive"}, {"1s", "couldn't be parsed into an integer"}}},
	"client-output-buffer-limit": {good: [][2]string{
		{"normal 1mb 512kb 10", "normal 1048576 524288 10 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		{"NORMAL 5 6 7 pubsub 1k 2k 3", "normal 5 6 7 slave 268435456 67108864 60 pubsub 1000 2000 3"},
		{"replica 1 2 3", "normal 0 0 0 slave 1 2 3 pubsub 33554432 8388608 60"},
		{"slave 0 0 0", "normal 0 0 0 slave 0 0 0 pubsub 33554432 8388608 60"},
		{"", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"}},
		bad: [][2]string{{"normal 1 2", "Wrong number of arguments in buffer limit configuration."},
			{"bogus 1 2 3", "Invalid client class specified in buffer limit configuration."},
			{"master 1 2 3", "Invalid client class"},
			{"normal 1 2 -1", "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
			{"normal 1x 2 3", "Error in hard, soft"}, {"normal 1 2 3 pubsub 1 2", "Wrong number"},
			{"normal 1 2 3 pubsub -1 2 3", "Error in hard, soft"}}},
	"turnstile-shards": {good: [][2]string{{"8", "8"}, {"1", "1"}, {"64", "64"}},
		bad: [][2]string{{"0", "between 1 and 65536"}, {"65537", "between 1 and 65536"}}},
	"databases": {good: [][2]string{{"1", "1"}, {"1024", "1024"}},
		bad: [][2]string{{"0", "between 1 and 1024"}, {"1025", "between 1 and 1024"}}},
	"hz": {good: [][2]string{{"1", "1"}, {"500", "500"}, {"0", "1"}, {"501", "500"}, {"2147483647", "500"}}, // clamped, as Redis
		bad: [][2]string{{"-1", "between 0 and 2147483647"}, {"2147483648", "between 0 and 2147483647"}, {"1.5", "integer"}}},
	"proto-max-bulk-len": {good: [][2]string{{"64mb", "67108864"}, {"1gb", "1073741824"}, {"512k", "512000"}, {"20", "20"}, {"3GB", "3221225472"}},
		bad: [][2]string{{"0", "between 1 and"}, {"-5", "memory value"}, {"1tb", "memory value"}, {"mb", "memory value"}, {" 1mb", "memory value"}, {"1.5mb", "memory value"}, {"99999999999gb", "between 1 and 9223372036854775807"}}},
	"client-query-buffer-limit": {good: [][2]string{{"1mb", "1048576"}, {"2g", "2000000000"}, {"100b", "100"}},
		bad: [][2]string{{"lots", "memory value"}}},
	"loglevel": {good: [][2]string{{"debug", "debug"}, {"VERBOSE", "verbose"}, {"notice", "notice"}, {"warning", "warning"}, {"info", "notice"}, {"warn", "warning"}},
		bad: [][2]string{{"loud", "one of the following: debug, verbose, notice, warning"}}},
	"dir":         {good: [][2]string{{"/var/lib/turnstile", "/var/lib/turnstile"}}},
	"dbfilename":  {good: [][2]string{{"x.tsr", "x.tsr"}}},
	"rl-policies": {good: [][2]string{{"", ""}}},
	"save": {good: [][2]string{{"3600 1 300 100", "3600 1 300 100"}, {"", ""}, {"  60   5 ", "60 5"}},
		bad: [][2]string{{"60", "Invalid save parameters"}, {"a b", "Invalid save parameters"}, {"0 5", "Invalid save parameters"}, {"5 -1", "Invalid save parameters"}}},
	"logfile":   {good: [][2]string{{"", ""}, {"/var/log/turnstile.log", "/var/log/turnstile.log"}}},
	"pidfile":   {good: [][2]string{{"", ""}, {"/run/turnstile.pid", "/run/turnstile.pid"}}},
	"daemonize": {good: [][2]string{{"no", "no"}, {"YES", "yes"}}, bad: [][2]string{{"1", "'yes' or 'no'"}}},
	"stop-writes-on-bgsave-error": {good: [][2]string{{"no", "no"}, {"YES", "yes"}},
		bad: [][2]string{{"maybe", "argument must be 'yes' or 'no'"}}},
	"appendonly": {good: [][2]string{{"yes", "yes"}, {"NO", "no"}},
		bad: [][2]string{{"maybe", "argument must be 'yes' or 'no'"}, {"1", "'yes' or 'no'"}}},
	"appendfilename": {good: [][2]string{{"log.aof", "log.aof"}}},
	"appendfsync": {good: [][2]string{{"always", "always"}, {"EVERYSEC", "everysec"}, {"no", "no"}},
		bad: [][2]string{{"sometimes", "one of the following: everysec, always, no"}}},
	"auto-aof-rewrite-percentage": {good: [][2]string{{"0", "0"}, {"250", "250"}},
		bad: [][2]string{{"-1", "between 0 and 2147483647"}, {"10k", "integer"}}},
	"auto-aof-rewrite-min-size": {good: [][2]string{{"0", "0"}, {"32mb", "33554432"}, {"1k", "1000"}},
		bad: [][2]string{{"-1", "memory value"}}},
	"busy-reply-threshold": {good: [][2]string{{"100", "100"}, {"0", "0"}},
		bad: [][2]string{{"-1", "between 0 and"}, {"5s", "integer"}}},
	"lua-time-limit": {good: [][2]string{{"2000", "2000"}},
		bad: [][2]string{{"x", "integer"}}},
	"turnstile-metrics-addr": {good: [][2]string{{"", ""}}},
	"turnstile-hotkeys": {good: [][2]string{{"no", "no"}, {"yes", "yes"}},
		bad: [][2]string{{"1", "'yes' or 'no'"}}},
	"slowlog-log-slower-than": {good: [][2]string{{"-1", "-1"}, {"0", "0"}, {"25000", "25000"}},
		bad: [][2]string{{"-2", "between -1 and"}, {"1ms", "integer"}}},
	"slowlog-max-len": {good: [][2]string{{"0", "0"}, {"1024", "1024"}},
		bad: [][2]string{{"-1", "between 0 and"}}},
	"latency-monitor-threshold": {good: [][2]string{{"0", "0"}, {"100", "100"}},
		bad: [][2]string{{"-1", "between 0 and"}, {"x", "integer"}}},
	"latency-tracking": {good: [][2]string{{"no", "no"}, {"YES", "yes"}},
		bad: [][2]string{{"maybe", "'yes' or 'no'"}}},
	"turnstile-native-scripts": {good: [][2]string{{"no", "no"}, {"yes", "yes"}},
		bad: [][2]string{{"maybe", "yes"}}},
	"enable-debug-command": {good: [][2]string{{"no", "no"}, {"YES", "yes"}, {"local", "local"}},
		bad: [][2]string{{"maybe", "one of the following: no, yes, local"}}},
	"turnstile-watch-max-keys": {good: [][2]string{{"10", "10"}},
		bad: [][2]string{{"0", "between 1 and 2147483647"}, {"1kb", "integer"}}},
	"turnstile-multi-max-commands": {good: [][2]string{{"5000", "5000"}},
		bad: [][2]string{{"0", "between 1 and 2147483647"}}},
	"maxmemory": {good: [][2]string{{"100mb", "104857600"}, {"0", "0"}, {"1gb", "1073741824"}},
		bad: [][2]string{{"-1", "memory value"}, {"lots", "memory value"}}},
	"maxmemory-policy": {good: [][2]string{{"allkeys-lru", "allkeys-lru"}, {"VOLATILE-TTL", "volatile-ttl"}, {"noeviction", "noeviction"}},
		bad: [][2]string{{"lru", "one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"}}},
	"maxmemory-samples": {good: [][2]string{{"1", "1"}, {"64", "64"}},
		bad: [][2]string{{"0", "between 1 and 2147483647"}, {"x", "integer"}}},
	"lfu-log-factor": {good: [][2]string{{"0", "0"}, {"100", "100"}},
		bad: [][2]string{{"-1", "between 0 and 2147483647"}}},
	"lfu-decay-time": {good: [][2]string{{"0", "0"}, {"60", "60"}},
		bad: [][2]string{{"x", "integer"}}},
	"turnstile-multi-max-bytes": {good: [][2]string{{"16mb", "16777216"}, {"1", "1"}},
		bad: [][2]string{{"0", "between 1 and"}, {"16 mb", "memory value"}}},
}

// TestConfigTableParse: every settable row has cases; good values are
// stored and reported in canonical form (also by a server built from the
// config), bad ones are refused with a clear error and leave the config
// as it was.
func TestConfigTableParse(t *testing.T) {
	for _, p := range ConfigParams() {
		cases, ok := configCases[p.Name]
		if !ok {
			if p.Settable() {
				t.Errorf("%s: no parse cases", p.Name)
			}
			continue
		}
		for _, g := range cases.good {
			c := quietConfig()
			if err := p.Parse(&c, g[0]); err != nil {
				t.Errorf("%s %q: %v", p.Name, g[0], err)
				continue
			}
			if got := p.Format(&c); got != g[1] {
				t.Errorf("%s %q: stored as %q, want %q", p.Name, g[0], got, g[1])
			}
			s, err := New(c)
			if err != nil {
				t.Errorf("%s %q: New: %v", p.Name, g[0], err)
				continue
			}
			if got := p.Get(s); got != g[1] {
				t.Errorf("%s %q: CONFIG GET would say %q, want %q", p.Name, g[0], got, g[1])
			}
		}
		for _, b := range cases.bad {
			c := quietConfig()
			err := p.Parse(&c, b[0])
			if err == nil || !strings.Contains(err.Error(), b[1]) {
				t.Errorf("%s %q: error %v, want one containing %q", p.Name, b[0], err, b[1])
			}
			if !reflect.DeepEqual(c, quietConfig()) {
				t.Errorf("%s %q: a refused value changed the config", p.Name, b[0])
			}
		}
	}
	for name := range configCases {
		if LookupConfigParam(name) == nil && configByName[name] == nil {
			t.Errorf("cases for unknown row %q", name)
		}
	}
}

func TestConfigTableShape(t *testing.T) {
	var mutable []string
	for _, p := range ConfigParams() {
		if p.Usage == "" {
			t.Errorf("%s: no usage text", p.Name)
		}
		if p.Mutable() {
			mutable = append(mutable, p.Name)
		}
		if p.Settable() && LookupConfigParam(p.Flag) != p {
			t.Errorf("%s: not found by its flag %q", p.Name, p.Flag)
		}
	}
	if want := "[protected-mode tls-cert-file tls-key-file tls-ca-cert-file tls-auth-clients tls-protocols requirepass acl-pubsub-default acllog-max-len maxclients timeout client-output-buffer-limit hz maxmemory maxmemory-policy maxmemory-samples lfu-log-factor lfu-decay-time loglevel save stop-writes-on-bgsave-error appendonly appendfsync auto-aof-rewrite-percentage auto-aof-rewrite-min-size busy-reply-threshold lua-time-limit slowlog-log-slower-than slowlog-max-len latency-monitor-threshold latency-tracking turnstile-native-scripts turnstile-hotkeys]"; fmt.Sprint(mutable) != want {
		t.Errorf("mutable rows %v, want %s", mutable, want)
	}
	if p := LookupConfigParam("SHARDS"); p == nil || p.Name != "turnstile-shards" {
		t.Errorf("LookupConfigParam(shards) = %v", p)
	}
	if LookupConfigParam("nosuch") != nil {
		t.Error("LookupConfigParam found a row that does not exist")
	}
	// The configured shard count is kept; CONFIG GET reports the effective,
	// rounded-up one.
	p := configByName["turnstile-shards"]
	c := quietConfig()
	if err := p.Parse(&c, "3"); err != nil || p.Format(&c) != "3" {
		t.Fatalf("shards 3: %q, %v", p.Format(&c), err)
	}
	if s, err := New(c); err != nil || p.Get(s) != "4" {
		t.Errorf("effective shards for 3: %v", err)
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1": 1, "1b": 1, "1B": 1, "1k": 1000, "1kb": 1024, "1KB": 1024, "2m": 2_000_000,
		"2mb": 2 << 20, "3g": 3_000_000_000, "3gb": 3 << 30, "9223372036854775807": math.MaxInt64,
	} {
		if got, err := ParseMemory(in); err != nil || got != want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1", "+1", "1 kb", "1kib", "1.5g", "0x10", "1tb"} {
		if _, err := ParseMemory(in); err == nil || errors.Is(err, errMemoryOverflow) {
			t.Errorf("ParseMemory(%q): err %v, want a format error", in, err)
		}
	}
	for _, in := range []string{"9223372036854775808", "8589934592gb", "99999999999999999999"} {
		if _, err := ParseMemory(in); !errors.Is(err, errMemoryOverflow) {
			t.Errorf("ParseMemory(%q): err %v, want overflow", in, err)
		}
	}
}

func TestConfigSlogLevel(t *testing.T) {
	for name, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "verbose": slog.LevelInfo, "notice": slog.LevelInfo, "warning": slog.LevelWarn, "": slog.LevelInfo,
	} {
		c := Config{LogLevel: name}
		if got := c.SlogLevel(); got != want {
			t.Errorf("SlogLevel(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestConfigGetSetCommands drives CONFIG GET and SET over the wire.
func TestConfigGetSetCommands(t *testing.T) {
	s, addr, _ := newTestServer(t, func(c *Config) {
		c.MaxWatchedKeys = 7
		c.MaxQueuedBytes = 3 << 20
	})
	rc := dialRaw(t, addr)

	// CONFIG GET * lists every row once, with the running server's values.
	got := rc.do("CONFIG", "GET", "*")
	var want strings.Builder
	fmt.Fprintf(&want, "*%d\r\n", 2*len(configTable))
	for _, p := range configTable {
		v := p.Get(s)
		fmt.Fprintf(&want, "$%d\r\n%s\r\n$%d\r\n%s\r\n", len(p.Name), p.Name, len(v), v)
	}
	if got != want.String() {
		t.Errorf("CONFIG GET * = %q\nwant %q", got, want.String())
	}
	for pat, want := range map[string]string{
		"turnstile-watch-max-keys": "7", "turnstile-multi-max-bytes": "3145728", "turnstile-shards": "16",
		"maxmemory": "0", "proto-max-bulk-len": "536870912", "loglevel": "notice",
	} {
		if got := rc.do("CONFIG", "GET", pat); got != fmt.Sprintf("*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(pat), pat, len(want), want) {
			t.Errorf("CONFIG GET %s = %q, want %s", pat, got, want)
		}
	}
	// Several patterns, overlapping: each parameter once, in table order.
	if got := rc.do("CONFIG", "GET", "appendf*", "APPENDFSYNC", "dbfilename"); got !=
		"*6\r\n$10\r\ndbfilename\r\n$8\r\ndump.tsr\r\n$14\r\nappendfilename\r\n$14\r\nappendonly.aof\r\n$11\r\nappendfsync\r\n$8\r\neverysec\r\n" {
		t.Errorf("CONFIG GET appendf* APPENDFSYNC dbfilename = %q", got)
	}

	// A mutable one takes effect.
	if got := rc.do("CONFIG", "SET", "requirepass", "pw", "MAXCLIENTS", "77"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET = %q", got)
	}
	if got := s.maxClients.Load(); got != 77 {
		t.Errorf("maxclients after SET = %d", got)
	}
	if got := rc.do("CONFIG", "GET", "requirepass"); got != "*2\r\n$11\r\nrequirepass\r\n$2\r\npw\r\n" {
		t.Errorf("CONFIG GET requirepass = %q", got)
	}
	rc2 := dialRaw(t, addr)
	if got := rc2.do("GET", "k"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Errorf("new connection without AUTH after SET requirepass: %q", got)
	}
	if got := rc2.do("AUTH", "pw"); got != "+OK\r\n" {
		t.Errorf("AUTH with the new password = %q", got)
	}

	// Immutable ones answer Redis's error and change nothing.
	for _, name := range []string{"port", "turnstile-shards", "proto-max-bulk-len", "turnstile-multi-max-bytes", "appendfilename"} {
		want := "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config\r\n"
		if got := rc.do("CONFIG", "SET", strings.ToUpper(name), "1"); got != want {
			t.Errorf("CONFIG SET %s = %q", name, got)
		}
	}
	// dir and dbfilename are protected, as in Redis 7.
	for _, name := range []string{"dir", "DBFILENAME"} {
		want := "-ERR CONFIG SET failed (possibly related to argument '" + strings.ToLower(name) + "') - can't set protected config\r\n"
		if got := rc.do("CONFIG", "SET", name, "x"); got != want {
			t.Errorf("CONFIG SET %s = %q", name, got)
		}
	}
	// All or nothing: a bad value, an immutable or unknown name, or a
	// repeated one anywhere leaves every parameter as it was.
	for _, args := range [][]string{
		{"maxclients", "5", "requirepass", "x", "port", "1"},
		{"requirepass", "x", "maxclients", "0"},
		{"requirepass", "x", "nosuch", "1"},
		{"maxclients", "5", "maxclients", "6"},
	} {
		if got := rc.do(append([]string{"CONFIG", "SET"}, args...)...); !strings.HasPrefix(got, "-ERR ") {
			t.Errorf("CONFIG SET %v = %q, want an error", args, got)
		}
	}
	if got := rc.do("CONFIG", "SET", "maxclients", "5", "maxclients", "6"); got != "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate parameter\r\n" {
		t.Errorf("duplicate = %q", got)
	}
	if got := rc.do("CONFIG", "SET", "requirepass", "x", "nosuch", "1"); got != "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n" {
		t.Errorf("unknown = %q", got)
	}
	if got := s.maxClients.Load(); got != 77 {
		t.Errorf("maxclients after failed SETs = %d", got)
	}
	if got := *s.requirePass.Load(); got != "pw" {
		t.Errorf("requirepass after failed SETs = %q", got)
	}
}
