// Command flood is the memory-bound proof of issue 13 as a benchmark: for
// each maxmemory-policy it starts a fresh Turnstile with --maxmemory, floods
// it with distinct random keys, and measures, at the same time, what the
// flood does to RSS, to other clients' latency and to a set of hot,
// rate-limited clients.
//
// Per policy, concurrently, each bounded in count and in time:
//
//   - the flood: -keys distinct keys on -conns connections, pipelined -batch
//     at a time: mostly CL.THROTTLE flood:<id> 10 100 86400 (a 1-day period,
//     so no key expires during the run and only eviction frees memory),
//     plus a share (-set-share) of SET big:<id> <-value-size bytes>. It
//     counts OOM errors and every other error (which should not happen).
//   - hot limited clients: -hot keys hot:<i>, each sent CL.THROTTLE hot:<i>
//     9 10 60 (10-token burst, 10 a minute) every -hot-every, far above its
//     limit, from -hot-conns connections. A correct GCRA limiter allows a
//     key at most burst+1 requests at once and one more per emission
//     interval (period/count): burst+1 + floor(elapsed/interval), +1 for the
//     boundary. What a key was allowed beyond that is "forgiven": requests
//     let through early because its bucket was evicted (a fresh key is a
//     full bucket). A reset also shows in the replies: remaining jumps up by
//     more than the tokens that came due since the last request; such keys
//     are counted as evicted.
//   - a probe: GET probe (set before the flood) every -probe-every on its
//     own connection: round-trip latency, its p99 and max, and the number
//     over -stall (the target is none over 50 ms). With noeviction it shows
//     that reads keep working while writes get OOM.
//   - RSS: VmRSS from /proc/<pid>/status every -sample-every, and INFO
//     used_memory / evicted_keys every 0.5 s; the run reports the max RSS and
//     the max RSS from the moment the limit was first reached (used memory at
//     maxmemory, a key evicted or an OOM error), against maxmemory (target:
//     at most 1.10 ×).
//
// It prints one line per policy and writes -csv (one row per policy),
// -series (RSS over time per policy) and, when asked, -md (the MEMORY.md
// tables and reading, see report.go) and -svg (RSS over time, svg.go).
// bench/flood.sh builds the server and runs it; see bench/README.md.
//
// The client is a small RESP client over net.Conn (resp.go), standard
// library only. The flood runs as fast as the server answers unless -rate
// caps it; each policy's run ends after -time-cap at the latest.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// allPolicies is Redis's eight maxmemory policies, in the order the tables
// show them.
var allPolicies = []string{
	"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
}

// config is the run's settings (the flags).
type config struct {
	bin         string
	policies    []string
	maxmem      string
	keys        int64
	setShare    float64
	valueSize   int
	setEx       int
	floodConns  int
	batch       int
	rate        float64
	timeCap     time.Duration
	tail        time.Duration
	hot         int
	hotConns    int
	hotEvery    time.Duration
	hotQuota    hotQuota
	probeEvery  time.Duration
	stall       time.Duration
	sampleEvery time.Duration
	extra       []string
	logDir      string
	csvPath     string
	seriesPath  string
	mdPath      string
	svgPath     string
	command     string
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	cfg := &config{}
	fs.StringVar(&cfg.bin, "bin", "bench/out/turnstile", "the Turnstile binary to start")
	policies := fs.String("policies", strings.Join(allPolicies, ","), "maxmemory policies to run, comma-separated")
	fs.StringVar(&cfg.maxmem, "maxmemory", "100mb", "--maxmemory of each server")
	keys := fs.Float64("keys", 1e7, "distinct keys the flood sends per policy (1e6 works)")
	fs.Float64Var(&cfg.setShare, "set-share", 0.05, "share of the flood's keys that are SET big:<id> <value> (the rest CL.THROTTLE)")
	fs.IntVar(&cfg.valueSize, "value-size", 4096, "bytes of each SET value")
	fs.IntVar(&cfg.setEx, "set-ex", 0, "EX seconds of the SET keys (0: no expiry, so volatile policies cannot evict them)")
	fs.IntVar(&cfg.floodConns, "conns", 4, "flood connections")
	fs.IntVar(&cfg.batch, "batch", 100, "commands per flood pipeline")
	fs.Float64Var(&cfg.rate, "rate", 0, "flood keys per second over all connections (0: as fast as the server answers)")
	fs.DurationVar(&cfg.timeCap, "time-cap", 240*time.Second, "longest flood per policy")
	fs.DurationVar(&cfg.tail, "tail", time.Second, "the hot clients and the probe go on this long after the flood")
	fs.IntVar(&cfg.hot, "hot", 100, "hot limited clients (keys hot:<i>)")
	fs.IntVar(&cfg.hotConns, "hot-conns", 2, "connections the hot clients share")
	fs.DurationVar(&cfg.hotEvery, "hot-every", 50*time.Millisecond, "each hot client sends one request this often")
	fs.Int64Var(&cfg.hotQuota.burst, "hot-burst", 9, "hot clients' CL.THROTTLE max_burst")
	fs.Int64Var(&cfg.hotQuota.count, "hot-count", 10, "hot clients' CL.THROTTLE count per period")
	fs.Int64Var(&cfg.hotQuota.period, "hot-period", 60, "hot clients' CL.THROTTLE period, seconds")
	fs.DurationVar(&cfg.probeEvery, "probe-every", 10*time.Millisecond, "time between probe GETs")
	fs.DurationVar(&cfg.stall, "stall", 50*time.Millisecond, "a probe slower than this is a stall")
	fs.DurationVar(&cfg.sampleEvery, "sample-every", 100*time.Millisecond, "time between RSS samples")
	serverArgs := fs.String("server-args", "", "more server flags, space-separated (for example \"--maxmemory-samples 10\")")
	fs.StringVar(&cfg.logDir, "logdir", "bench/out", "directory of the servers' logs")
	fs.StringVar(&cfg.csvPath, "csv", "bench/out/flood.csv", "one row per policy")
	fs.StringVar(&cfg.seriesPath, "series", "bench/out/flood-series.csv", "RSS over time per policy")
	fs.StringVar(&cfg.mdPath, "md", "", "write the tables and their reading here (bench/MEMORY.md)")
	fs.StringVar(&cfg.svgPath, "svg", "", "write the RSS chart here (bench/memory.svg)")
	fs.StringVar(&cfg.command, "command", "", "the command line to name in -md (default: this tool's)")
	quick := fs.Bool("quick", false, "a small run: -maxmemory 20mb -keys 3e5 -policies noeviction,allkeys-lru -time-cap 60s, unless given")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]string{"maxmemory": "20mb", "keys": "3e5", "policies": "noeviction,allkeys-lru", "time-cap": "60s"} {
			if !set[name] {
				fs.Set(name, v)
			}
		}
	}
	cfg.keys = int64(*keys)
	cfg.extra = strings.Fields(*serverArgs)
	for p := range strings.SplitSeq(*policies, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		known := false
		for _, q := range allPolicies {
			known = known || p == q
		}
		if !known {
			return nil, fmt.Errorf("unknown policy %q (known: %s)", p, strings.Join(allPolicies, ", "))
		}
		cfg.policies = append(cfg.policies, p)
	}
	if cfg.command == "" {
		cfg.command = "flood " + strings.Join(args, " ")
	}
	switch {
	case len(cfg.policies) == 0:
		return nil, errors.New("no policy to run")
	case *keys < 1 || *keys > 1e10:
		return nil, errors.New("-keys must be within 1..1e10")
	case cfg.setShare < 0 || cfg.setShare > 1:
		return nil, errors.New("-set-share must be within 0..1")
	case cfg.valueSize < 1 || cfg.valueSize > 64<<20:
		return nil, errors.New("-value-size must be within 1 B..64 MiB")
	case cfg.setEx < 0:
		return nil, errors.New("-set-ex must not be negative")
	case cfg.floodConns < 1 || cfg.floodConns > 1000 || cfg.batch < 1 || cfg.batch > 100000:
		return nil, errors.New("-conns must be within 1..1000 and -batch within 1..100000")
	case cfg.rate < 0:
		return nil, errors.New("-rate must not be negative")
	case cfg.timeCap <= 0 || cfg.tail < 0:
		return nil, errors.New("-time-cap must be positive and -tail not negative")
	case cfg.hot < 1 || cfg.hotConns < 1 || cfg.hotEvery <= 0:
		return nil, errors.New("-hot and -hot-conns must be at least 1, -hot-every positive")
	case cfg.hotQuota.burst < 0 || cfg.hotQuota.count < 1 || cfg.hotQuota.period < 1:
		return nil, errors.New("-hot-burst must not be negative, -hot-count and -hot-period at least 1")
	case cfg.probeEvery <= 0 || cfg.stall <= 0 || cfg.sampleEvery <= 0:
		return nil, errors.New("-probe-every, -stall and -sample-every must be positive")
	}
	if _, err := parseBytes(cfg.maxmem); err != nil {
		return nil, fmt.Errorf("-maxmemory: %w", err)
	}
	return cfg, nil
}

func run(cfg *config) error {
	if _, err := os.Stat(cfg.bin); err != nil {
		return fmt.Errorf("-bin: %w (build it with go build -o %s ./cmd/turnstile)", err, cfg.bin)
	}
	for _, p := range []string{cfg.logDir, filepath.Dir(cfg.csvPath), filepath.Dir(cfg.seriesPath)} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	perPolicy := cfg.timeCap + cfg.tail + 20*time.Second // start, tail, INFO, stop
	fmt.Printf("flood: %d policies, %d keys each (%.0f%% SET of %d B), maxmemory %s, %d hot clients; each policy at most %s, so at most %s in all\n",
		len(cfg.policies), cfg.keys, cfg.setShare*100, cfg.valueSize, cfg.maxmem, cfg.hot,
		perPolicy.Round(time.Second), (perPolicy * time.Duration(len(cfg.policies))).Round(time.Second))
	m := meta{started: time.Now(), loadStart: loadAvg()}
	var results []result
	for i, p := range cfg.policies {
		logPath := filepath.Join(cfg.logDir, "flood-"+p+".log")
		r := runPolicy(cfg, p, logPath)
		results = append(results, r)
		fmt.Println(r.line())
		if err := writeCSV(cfg.csvPath, results); err != nil {
			return err
		}
		if err := writeSeries(cfg.seriesPath, results); err != nil {
			return err
		}
		if left := len(cfg.policies) - i - 1; left > 0 && r.sent > 0 && r.duration > 0 {
			// The rest at this run's rate, capped per policy.
			each := time.Duration(float64(cfg.keys) / float64(r.sent) * float64(r.duration))
			each = min(each, cfg.timeCap) + cfg.tail + 3*time.Second
			fmt.Printf("  (%d policies left: about %s more at %.0f keys/s)\n", left,
				(each * time.Duration(left)).Round(time.Second), float64(r.sent)/r.duration.Seconds())
		}
	}
	m.loadEnd = loadAvg()
	if cfg.svgPath != "" {
		if err := os.WriteFile(cfg.svgPath, []byte(rssChart(cfg, results)), 0o644); err != nil {
			return err
		}
	}
	if cfg.mdPath != "" {
		if err := os.WriteFile(cfg.mdPath, []byte(markdown(cfg, m, results)), 0o644); err != nil {
			return err
		}
	}
	for _, r := range results {
		if r.failure != "" || r.crashed {
			return fmt.Errorf("%s: the run failed (see the line above and %s)", r.policy, filepath.Join(cfg.logDir, "flood-"+r.policy+".log"))
		}
	}
	return nil
}

const mib = 1 << 20

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rssRatio is max RSS after the limit was reached over maxmemory (0 if
// either is unknown).
func (r result) rssRatio() float64 {
	if r.maxmem <= 0 || r.maxRSSAfter <= 0 {
		return 0
	}
	return float64(r.maxRSSAfter) / float64(r.maxmem)
}

// line is the one-line summary printed per policy.
func (r result) line() string {
	if r.failure != "" {
		return fmt.Sprintf("%-15s FAILED: %s", r.policy, r.failure)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-15s keys %d in %.1fs", r.policy, r.sent, r.duration.Seconds())
	if r.timedOut {
		b.WriteString(" (time cap)")
	}
	if r.crashed {
		b.WriteString(" CRASHED")
	}
	fmt.Fprintf(&b, ", OOM %d, other errors %d", r.oom, r.other)
	if r.floodErrs != "" {
		fmt.Fprintf(&b, " [%s]", r.floodErrs)
	}
	fmt.Fprintf(&b, ", evicted %d, expired %d; RSS max %.1f MiB, after limit %.1f MiB = %.2f x maxmemory; used_memory %.1f MiB",
		r.evicted, r.expired, float64(r.maxRSS)/mib, float64(r.maxRSSAfter)/mib, r.rssRatio(), float64(r.usedMemory)/mib)
	fmt.Fprintf(&b, "; hot: allowed %d limited %d OOM %d errors %d of %d, forgiven %d (bound %d a key), evicted keys %d/%d (%d resets)",
		r.hotAllowed, r.hotLimited, r.hotOOM, r.hotErrs, r.hotSent, r.forgiven, r.hotBound, r.hotEvicted, r.hotKeys, r.hotEvictions)
	if r.hotErrText != "" {
		fmt.Fprintf(&b, " [%s]", r.hotErrText)
	}
	fmt.Fprintf(&b, "; probe p99 %.2f ms, max %.1f ms, stalls %d of %d, misses %d, errors %d",
		ms(r.probeP99), ms(r.probeMax), r.stalls, r.probes, r.probeMisses, r.probeErrs)
	if r.probeErrText != "" {
		fmt.Fprintf(&b, " [%s]", r.probeErrText)
	}
	return b.String()
}

var csvHeader = []string{
	"policy", "maxmemory", "keys_sent", "throttles", "sets", "oom", "other_errors", "duration_s", "timed_out", "crashed",
	"used_memory", "evicted_keys", "expired_keys", "dbsize", "max_rss", "max_rss_after_limit", "rss_ratio", "limit_at_s",
	"hot_keys", "hot_sent", "hot_allowed", "hot_limited", "hot_oom", "hot_errors", "hot_bound", "forgiven",
	"hot_evicted_keys", "hot_evictions", "probes", "probe_p99_ms", "probe_max_ms", "stalls", "probe_misses", "probe_errors",
	"failure",
}

func (r result) csvRow() []string {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	f := func(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	return []string{
		r.policy, i(r.maxmem), i(r.sent), i(r.throttles), i(r.sets), i(r.oom), i(r.other), f(r.duration.Seconds(), 3),
		strconv.FormatBool(r.timedOut), strconv.FormatBool(r.crashed),
		i(r.usedMemory), i(r.evicted), i(r.expired), i(r.dbsize), i(r.maxRSS), i(r.maxRSSAfter), f(r.rssRatio(), 3),
		f(r.limitAt.Seconds(), 1),
		i(int64(r.hotKeys)), i(r.hotSent), i(r.hotAllowed), i(r.hotLimited), i(r.hotOOM), i(r.hotErrs), i(r.hotBound), i(r.forgiven),
		i(int64(r.hotEvicted)), i(r.hotEvictions), i(int64(r.probes)), f(ms(r.probeP99), 3), f(ms(r.probeMax), 3),
		i(int64(r.stalls)), i(r.probeMisses), i(r.probeErrs), r.failure,
	}
}

func writeCSV(path string, results []result) error {
	rows := [][]string{csvHeader}
	for _, r := range results {
		rows = append(rows, r.csvRow())
	}
	return writeRows(path, rows)
}

// writeSeries writes the RSS samples: policy, seconds since the flood
// began, RSS and INFO used_memory (bytes; -1 before the first INFO), and
// flood commands answered so far.
func writeSeries(path string, results []result) error {
	rows := [][]string{{"policy", "t_s", "rss", "used_memory", "keys_sent"}}
	for _, r := range results {
		for _, s := range r.series {
			rows = append(rows, []string{r.policy, strconv.FormatFloat(s.t.Seconds(), 'f', 2, 64),
				strconv.FormatInt(s.rss, 10), strconv.FormatInt(s.used, 10), strconv.FormatInt(s.sent, 10)})
		}
	}
	return writeRows(path, rows)
}

func writeRows(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
