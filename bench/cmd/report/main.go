// Command report turns bench/run.sh's results.csv into bench/RESULTS.md and
// SVG charts (standard library only).
//
//	report -csv bench/out/results.csv -meta bench/out/meta.txt \
//	       -commands bench/out/commands.tsv -dir bench
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/turnstile/turnstile/bench/internal/benchfmt"
)

const (
	chartMain  = "throughput.svg"
	chartConns = "connections.svg"
	chartKeys  = "bytes-per-key.svg"
)

// The main table's rows, in display order.
var mainWorkloads = []struct{ server, workload, label string }{
	{"turnstile", "CL.THROTTLE", "Turnstile `CL.THROTTLE k 15 30 60`"},
	{"turnstile", "INCR", "Turnstile `INCR k`"},
	{"redis", "INCR", "Redis `INCR k`"},
	{"redis", "SET", "Redis `SET k v`"},
	{"redis", "Lua GCRA", "Redis `EVALSHA` GCRA Lua (15 30 60)"},
	{"redis", "Lua token bucket", "Redis `EVALSHA` token bucket Lua (0.5/s, 16)"},
}

var colors = map[string]string{
	"turnstile/CL.THROTTLE":  "#1f6fd1",
	"turnstile/INCR":         "#7fb0ea",
	"redis/INCR":             "#d62728",
	"redis/SET":              "#ff9896",
	"redis/Lua GCRA":         "#8c564b",
	"redis/Lua token bucket": "#c49c94",
}

func main() {
	csvPath := flag.String("csv", "bench/out/results.csv", "results written by run.sh")
	metaPath := flag.String("meta", "bench/out/meta.txt", "machine description written by run.sh")
	cmdPath := flag.String("commands", "bench/out/commands.tsv", "exact commands written by run.sh")
	dir := flag.String("dir", "bench", "where RESULTS.md and the SVG charts go")
	flag.Parse()
	if err := run(*csvPath, *metaPath, *cmdPath, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(csvPath, metaPath, cmdPath, dir string) error {
	rows, err := readCSV(csvPath)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return errors.New(csvPath + ": no measurements")
	}
	m, err := readMeta(metaPath)
	if err != nil {
		return err
	}
	cmds, err := readCommands(cmdPath)
	if err != nil {
		return err
	}
	res := group(rows)
	charts := map[string]string{
		chartMain:  mainChart(res),
		chartConns: connsChart(res),
		chartKeys:  keysChart(res),

		chartPersist: persistChart(res),
	}
	for name, svg := range charts {
		p := filepath.Join(dir, name)
		if svg == "" {
			// No data for this chart in this run: drop a stale one.
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, []byte(svg), 0o644); err != nil {
			return err
		}
	}
	md := markdown(res, m, cmds, charts)
	// The scripting part (bench/scripts.sh, issue 11), the cluster's
	// (bench/cluster.sh, issue 12), the fault soak's summaries
	// (cluster/faulttest, TURNSTILE_SOAK) and the memory flood
	// (bench/flood.sh, issue 13), TLS against plain (bench/tls.sh, issue
	// 14) and the RL.* limiters (bench/rl.sh, issue 15) write tables of
	// their own; each is appended when present, under a heading of its own.
	for _, part := range []string{"SCRIPTS.md", "CLUSTER.md", "FAULTS.md", "MEMORY.md", "TLS.md", "LIMITERS.md"} {
		b, err := os.ReadFile(filepath.Join(dir, part))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		md += "\n#" + string(b)
	}
	// The maintainers' reading of missed targets lives in ANALYSIS.md (by
	// hand, it explains the numbers); it is appended when present.
	if analysis, err := os.ReadFile(filepath.Join(dir, "ANALYSIS.md")); err == nil {
		md += "\n" + string(analysis)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte(md), 0o644)
}

// find returns the configuration of phase/server/workload/pipeline, with
// clients and keys taken from the data (the first match) unless given (> 0).
func (res results) find(phase, server, workload string, pipeline, clients, keys int) (key, bool) {
	for _, r := range res.rows {
		if r.phase == phase && r.server == server && r.workload == workload && r.pipeline == pipeline &&
			(clients <= 0 || r.clients == clients) && (keys <= 0 || r.keys == keys) {
			return keyOf(r), true
		}
	}
	return key{}, false
}

func rps(r row) float64    { return r.rps }
func p50(r row) float64    { return r.p50 }
func p99(r row) float64    { return r.p99 }
func p999(r row) float64   { return r.p999 }
func perCPU(r row) float64 { return r.perCPU() }
func cpuShare(r row) float64 {
	return r.cpuShare()
}

// ----------------------------------------------------------- formatting --

func thousands(v float64) string { return benchfmt.Thousands(int64(math.Round(v))) }

func fmtRPS(s spread) string {
	if s.n <= 1 {
		return thousands(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", thousands(s.med), thousands(s.min), thousands(s.max))
}

func fmtMS(s spread) string {
	if s.n <= 1 {
		return fmt.Sprintf("%.3f", s.med)
	}
	return fmt.Sprintf("%.3f (%.3f–%.3f)", s.med, s.min, s.max)
}

// bestRatio is the median of the per-round ratios (the two runs of a round
// share most of the machine's noise), or the ratio of the medians when the
// rounds cannot be paired.
func bestRatio(perRound spread, ofMedians float64) float64 {
	if perRound.n == 0 {
		return ofMedians
	}
	return perRound.med
}

func fmtRatio(perRound spread, ofMedians float64) string {
	if perRound.n <= 1 {
		return fmt.Sprintf("%.2f×", bestRatio(perRound, ofMedians))
	}
	return fmt.Sprintf("%.2f× (rounds %.2f–%.2f)", perRound.med, perRound.min, perRound.max)
}

func fmtBytes(v float64) string {
	switch {
	case math.Abs(v) >= 1<<30:
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	case math.Abs(v) >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", v/(1<<10))
	}
}

func fmtKeys(n int) string {
	e := math.Log10(float64(n))
	if n > 0 && e == math.Trunc(e) && e >= 2 {
		sup := []rune("⁰¹²³⁴⁵⁶⁷⁸⁹")
		var b strings.Builder
		b.WriteString("10")
		for _, d := range strconv.Itoa(int(e)) {
			b.WriteRune(sup[d-'0'])
		}
		return b.String()
	}
	return thousands(float64(n))
}

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

// ------------------------------------------------------------- markdown --

func markdown(res results, m meta, cmds []command, charts map[string]string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("# Benchmark results: Turnstile vs Redis\n\n")
	w("Generated by `bench/run.sh` (via `bench/cmd/report`) from `bench/results.csv`; do not edit by hand.\n")
	w("Both servers ran side by side in one run, interleaved, each pinned to the same single core.\n")
	w("Medians over the rounds, with the min–max over the rounds in brackets. On a shared or virtual\n")
	w("machine trust the ratios measured in the same run rather than the absolute numbers\n")
	w("(see `bench/README.md`).\n\n")

	w("## Machine\n\n| | |\n|---|---|\n")
	for _, n := range m.names {
		w("| %s | %s |\n", n, strings.ReplaceAll(m.values[n], "|", "\\|"))
	}
	w("\n")

	headline(&b, res)
	mainTables(&b, res, charts)
	memoryTable(&b, res)
	scalingTables(&b, res, charts)
	persistSection(&b, res, m, cmds, charts)
	expireSection(&b, res, cmds)

	w("## Commands\n\n")
	w("Exactly as run (ports are the free loopback ports of this run). Every main and connection-scaling run\n")
	w("is preceded by `FLUSHALL`; the key-scaling runs keep the keys loaded just before them.\n")
	w("The Lua scripts are `bench/lua/gcra.lua` and `bench/lua/token_bucket.lua`, loaded with `SCRIPT LOAD`.\n")
	if hasPhase(res, "persist", "snapshot", "snaplat", "expire") {
		w("The persistence and expiry parts' commands are in their own sections above.\n")
	}
	w("\n")
	phases := []struct{ phase, title string }{
		{"main", "Main table"}, {"memory", "Memory per key"}, {"keys", "Scaling: live keys"}, {"conns", "Scaling: connections"},
	}
	for _, p := range phases {
		var lines []string
		for _, c := range cmds {
			if c.phase == p.phase {
				lines = append(lines, c.line)
			}
		}
		if len(lines) == 0 {
			continue
		}
		w("%s:\n\n```sh\n%s\n```\n\n", p.title, strings.Join(lines, "\n"))
	}
	return b.String()
}

func headline(b *strings.Builder, res results) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("## Headline: the issue 3 targets\n\n")
	w("Ratios are the median over the rounds of the ratio within each round (both runs of a round\n")
	w("share most of the machine's noise), with their range over the rounds.\n\n")
	w("| target | measured | |\n|---|---|---|\n")
	ratioRow := func(target string, a, bk key, okA, okB bool) {
		if !okA || !okB {
			w("| %s | not measured | |\n", target)
			return
		}
		pr, om, ok := res.ratio(a, bk, rps)
		if !ok {
			w("| %s | not measured | |\n", target)
			return
		}
		w("| %s | %s | %s |\n", target, fmtRatio(pr, om), verdict(bestRatio(pr, om) >= 1.0))
	}
	cl16, ok1 := res.find("main", "turnstile", "CL.THROTTLE", 16, 0, 0)
	incr16, ok2 := res.find("main", "redis", "INCR", 16, 0, 0)
	ratioRow("`CL.THROTTLE` at -P 16 ≥ 1.0× Redis `INCR` at -P 16", cl16, incr16, ok1, ok2)
	cl1, ok3 := res.find("main", "turnstile", "CL.THROTTLE", 1, 0, 0)
	set1, ok4 := res.find("main", "redis", "SET", 1, 0, 0)
	ratioRow("`CL.THROTTLE` at -P 1 ≥ 1.0× Redis `SET` at -P 1", cl1, set1, ok3, ok4)
	if ok3 && ok4 {
		a, _ := res.metric(cl1, p99)
		s, _ := res.metric(set1, p99)
		w("| `CL.THROTTLE` p99 at -P 1 ≤ Redis `SET` p99 | %s ms vs %s ms | %s |\n", fmtMS(a), fmtMS(s), verdict(a.med <= s.med))
	}
	// Memory at 10⁶ keys: the memory phase if it loaded 10^6, else the key scaling.
	var mem *row
	for _, phase := range []string{"memory", "keys"} {
		if k, ok := res.find(phase, "turnstile", "CL.THROTTLE k 0 1 3600", 0, 0, 1000000); ok && mem == nil {
			r := res.groups[k][0]
			mem = &r
		}
	}
	if mem != nil {
		w("| ≤ 64 B RSS per live GCRA key at 10⁶ keys | %.1f B/key (heap %.1f B/key) | %s |\n",
			mem.rssPerKey(), mem.heapPerKey(), verdict(mem.rssPerKey() <= 64))
	} else {
		w("| ≤ 64 B RSS per live GCRA key at 10⁶ keys | not measured at 10⁶ keys (set KEYS=1000000) | |\n")
	}
	if k, ok := res.find("keys", "turnstile", "CL.THROTTLE k 0 1 3600", 0, 0, 10000000); ok {
		r := res.groups[k][0]
		w("| 10⁷ keys in ≤ 0.7 GB RSS | %s RSS (%.1f B/key) | %s |\n",
			fmtBytes(r.rssAfter), r.rssPerKey(), verdict(r.rssAfter <= 0.7e9))
		k7, ok7 := res.find("keys", "turnstile", "CL.THROTTLE", 16, 0, 10000000)
		k5, ok5 := res.find("keys", "turnstile", "CL.THROTTLE", 16, 0, 100000)
		if ok7 && ok5 {
			// The rounds visit every key count in turn (run.sh), so the
			// ratio within a round compares runs close in time.
			a, _ := res.metric(k7, rps)
			c, _ := res.metric(k5, rps)
			per, ofMed, _ := res.ratio(k7, k5, rps)
			w("| throughput at 10⁷ keys ≥ 0.8× at 10⁵ | %s (%s vs %s req/s) | %s |\n",
				fmtRatio(per, ofMed), thousands(a.med), thousands(c.med), verdict(bestRatio(per, ofMed) >= 0.8))
		}
	} else {
		w("| 10⁷ keys: ≤ 0.7 GB RSS, throughput ≥ 0.8× that at 10⁵ | not measured (SCALING=1 SCALING_MAX=7) | |\n")
	}
	expireHeadline(w, res)
	w("\nFor context (not targets):\n\n")
	for _, c := range []struct {
		what     string
		server   string
		workload string
		pipeline int
	}{
		{"Redis `EVALSHA` GCRA Lua at -P 1", "redis", "Lua GCRA", 1},
		{"Redis `EVALSHA` GCRA Lua at -P 16", "redis", "Lua GCRA", 16},
		{"Redis `INCR` at -P 1", "redis", "INCR", 1},
		{"Redis `SET` at -P 16", "redis", "SET", 16},
	} {
		a, okA := res.find("main", "turnstile", "CL.THROTTLE", c.pipeline, 0, 0)
		o, okO := res.find("main", c.server, c.workload, c.pipeline, 0, 0)
		if !okA || !okO {
			continue
		}
		if pr, om, ok := res.ratio(a, o, rps); ok {
			w("- `CL.THROTTLE` vs %s: %s\n", c.what, fmtRatio(pr, om))
		}
	}
	for _, p := range []int{1, 16} {
		a, okA := res.find("main", "turnstile", "CL.THROTTLE", p, 0, 0)
		o, okO := res.find("main", "redis", "INCR", p, 0, 0)
		if !okA || !okO {
			continue
		}
		if pr, om, ok := res.ratio(a, o, perCPU); ok {
			w("- `CL.THROTTLE` vs Redis `INCR` at -P %d, requests per server CPU-second: %s\n", p, fmtRatio(pr, om))
		}
	}
	w("\n")
}

func mainTables(b *strings.Builder, res results, charts map[string]string) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	anyKey, ok := res.find("main", "turnstile", "CL.THROTTLE", 1, 0, 0)
	if !ok {
		return
	}
	w("## Throughput (requests/s, `redis-benchmark -c %d -r %d`)\n\n", anyKey.clients, anyKey.keys)
	w("| server and command | -P 1 | × Redis INCR | -P 16 | × Redis INCR |\n|---|---|---|---|---|\n")
	for _, mw := range mainWorkloads {
		w("| %s", mw.label)
		for _, p := range []int{1, 16} {
			k, ok := res.find("main", mw.server, mw.workload, p, 0, 0)
			if !ok {
				w(" | – | –")
				continue
			}
			s, _ := res.metric(k, rps)
			ratio := "–"
			if mw.server == "redis" && mw.workload == "INCR" {
				ratio = "reference"
			} else if ik, ok := res.find("main", "redis", "INCR", p, 0, 0); ok {
				if pr, om, ok := res.ratio(k, ik, rps); ok {
					ratio = fmtRatio(pr, om)
				}
			}
			w(" | %s | %s", fmtRPS(s), ratio)
		}
		w(" |\n")
	}
	w("\n")
	if charts[chartMain] != "" {
		w("![Throughput by server and command](%s)\n\n", chartMain)
	}

	w("### Per server CPU-second\n\n")
	w("Requests per CPU-second the server process used (user + system, from `/proc/<pid>/stat`), and the\n")
	w("share of a core it got during the run. When other work takes the core away, req/s drops but\n")
	w("requests per CPU-second mostly does not; a server that is not busy (for example waiting on the\n")
	w("client at -P 1) shows a share below 1.\n\n")
	w("| server and command | -P 1 req/CPU-s | × Redis INCR | core share | -P 16 req/CPU-s | × Redis INCR | core share |\n|---|---|---|---|---|---|---|\n")
	for _, mw := range mainWorkloads {
		w("| %s", mw.label)
		for _, p := range []int{1, 16} {
			k, ok := res.find("main", mw.server, mw.workload, p, 0, 0)
			if !ok {
				w(" | – | – | –")
				continue
			}
			s, _ := res.metric(k, perCPU)
			share, _ := res.metric(k, cpuShare)
			ratio := "–"
			if mw.server == "redis" && mw.workload == "INCR" {
				ratio = "reference"
			} else if ik, ok := res.find("main", "redis", "INCR", p, 0, 0); ok {
				if pr, om, ok := res.ratio(k, ik, perCPU); ok {
					ratio = fmtRatio(pr, om)
				}
			}
			w(" | %s | %s | %.2f", fmtRPS(s), ratio, share.med)
		}
		w(" |\n")
	}
	w("\n")

	w("## Latency at -P 1 (ms, `-c %d`)\n\n", anyKey.clients)
	w("Per-request latency as redis-benchmark measures it (send to reply, including the client's own\n")
	w("queueing among %d connections). p99.9 is the tightest upper bound redis-benchmark prints.\n\n", anyKey.clients)
	w("| server and command | p50 | p99 | p99.9 |\n|---|---|---|---|\n")
	for _, mw := range mainWorkloads {
		k, ok := res.find("main", mw.server, mw.workload, 1, 0, 0)
		if !ok {
			continue
		}
		a, _ := res.metric(k, p50)
		c, _ := res.metric(k, p99)
		d, _ := res.metric(k, p999)
		w("| %s | %s | %s | %s |\n", mw.label, fmtMS(a), fmtMS(c), fmtMS(d))
	}
	w("\n")
}

func memoryTable(b *strings.Builder, res results) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var rows []row
	for _, r := range res.rows {
		if r.phase == "memory" {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	w("## Memory per key\n\n")
	w("Fresh server processes; RSS (`VmRSS` in `/proc/<pid>/status`) and `INFO memory` `used_memory` read\n")
	w("before and one second after loading distinct 16-byte keys (`key:%%012d`) through `redis-cli --pipe`;\n")
	w("bytes/key = (after − before) / keys. Turnstile's `used_memory` is the Go heap's object bytes\n")
	w("(live data plus garbage not yet collected); Redis's is its allocator's count.\n\n")
	w("| server | keys | loaded with | RSS before | RSS after | **RSS B/key** | used_memory B/key |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		name := "Turnstile"
		if r.server == "redis" {
			name = "Redis"
		}
		w("| %s | %s | `%s` | %s | %s | **%.1f** | %.1f |\n", name, thousands(float64(r.keys)), r.workload,
			fmtBytes(r.rssBefore), fmtBytes(r.rssAfter), r.rssPerKey(), r.heapPerKey())
	}
	w("\n")
}

func scalingTables(b *strings.Builder, res results, charts map[string]string) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	keyCounts := distinct(res.rows, func(r row) bool { return r.phase == "keys" }, func(r row) int { return r.keys })
	conns := distinct(res.rows, func(r row) bool { return r.phase == "conns" }, func(r row) int { return r.clients })
	if len(keyCounts) == 0 && len(conns) == 0 {
		w("## Scaling\n\nNot run (opt in with `SCALING=1`; `SCALING_MAX=7` adds 10⁷ keys).\n\n")
		return
	}
	if len(keyCounts) > 0 {
		w("## Scaling: live keys\n\n")
		w("For each key count: a fresh Turnstile and a fresh Redis, loaded with the keys (as in the memory\n")
		w("table); all of them are loaded first, and each round then runs every key count in turn, so runs\n")
		w("at different key counts are close in time (the 10⁷ / 10⁵ ratio is taken within each round). The\n")
		w("workload is `CL.THROTTLE key:__rand_int__ 1000000 1 3600` (Turnstile) and the GCRA Lua script with\n")
		w("the same arguments (Redis) at `-P 16 -c 50 -r <keys>`: every call hits a loaded key and is\n")
		w("allowed, so it writes, and no key expires during the run.\n\n")
		w("| keys | Turnstile RSS B/key | Redis RSS B/key | Turnstile heap B/key | Redis used_memory B/key | Turnstile RSS | Turnstile `CL.THROTTLE` req/s | Redis Lua GCRA req/s | ratio |\n")
		w("|---|---|---|---|---|---|---|---|---|\n")
		for _, n := range keyCounts {
			w("| %s", fmtKeys(n))
			var tRSS float64
			for _, s := range []string{"turnstile", "redis"} {
				wl := "CL.THROTTLE k 0 1 3600"
				if s == "redis" {
					wl = "SET k ns PX 3600000"
				}
				if k, ok := res.find("keys", s, wl, 0, 0, n); ok {
					r := res.groups[k][0]
					w(" | %.1f", r.rssPerKey())
					if s == "turnstile" {
						tRSS = r.rssAfter
					}
				} else {
					w(" | –")
				}
			}
			for _, s := range []string{"turnstile", "redis"} {
				wl := "CL.THROTTLE k 0 1 3600"
				if s == "redis" {
					wl = "SET k ns PX 3600000"
				}
				if k, ok := res.find("keys", s, wl, 0, 0, n); ok {
					w(" | %.1f", res.groups[k][0].heapPerKey())
				} else {
					w(" | –")
				}
			}
			w(" | %s", fmtBytes(tRSS))
			tk, okT := res.find("keys", "turnstile", "CL.THROTTLE", 16, 0, n)
			rk, okR := res.find("keys", "redis", "Lua GCRA", 16, 0, n)
			for _, kk := range []struct {
				k  key
				ok bool
			}{{tk, okT}, {rk, okR}} {
				if s, ok := res.metric(kk.k, rps); kk.ok && ok {
					w(" | %s", fmtRPS(s))
				} else {
					w(" | –")
				}
			}
			if pr, om, ok := res.ratio(tk, rk, rps); okT && okR && ok {
				w(" | %s", fmtRatio(pr, om))
			} else {
				w(" | –")
			}
			w(" |\n")
		}
		w("\n")
		if charts[chartKeys] != "" {
			w("![Bytes per key by key count](%s)\n\n", chartKeys)
		}
	}
	if len(conns) > 0 {
		w("## Scaling: connections (requests/s at -P 1, `-r 100000`)\n\n")
		w("| -c | Turnstile `CL.THROTTLE` | Redis `INCR` | Redis Lua GCRA | CL.THROTTLE × Redis INCR | p99 Turnstile / Redis INCR (ms) |\n|---|---|---|---|---|---|\n")
		for _, c := range conns {
			w("| %d", c)
			for _, s := range [][2]string{{"turnstile", "CL.THROTTLE"}, {"redis", "INCR"}, {"redis", "Lua GCRA"}} {
				if k, ok := res.find("conns", s[0], s[1], 1, c, 0); ok {
					st, _ := res.metric(k, rps)
					w(" | %s", fmtRPS(st))
				} else {
					w(" | –")
				}
			}
			tk, okT := res.find("conns", "turnstile", "CL.THROTTLE", 1, c, 0)
			ik, okI := res.find("conns", "redis", "INCR", 1, c, 0)
			if pr, om, ok := res.ratio(tk, ik, rps); okT && okI && ok {
				a, _ := res.metric(tk, p99)
				d, _ := res.metric(ik, p99)
				w(" | %s | %.3f / %.3f", fmtRatio(pr, om), a.med, d.med)
			} else {
				w(" | – | –")
			}
			w(" |\n")
		}
		w("\n")
		if charts[chartConns] != "" {
			w("![Throughput by connection count](%s)\n\n", chartConns)
		}
	}
}

// --------------------------------------------------------------- charts --

func mainChart(res results) string {
	var cats []string
	var p1, p16 []spread
	for _, mw := range mainWorkloads {
		name := "Turnstile"
		if mw.server == "redis" {
			name = "Redis"
		}
		cats = append(cats, name+"\n"+mw.workload)
		for _, pp := range []struct {
			p   int
			dst *[]spread
		}{{1, &p1}, {16, &p16}} {
			var s spread
			if k, ok := res.find("main", mw.server, mw.workload, pp.p, 0, 0); ok {
				s, _ = res.metric(k, rps)
			}
			*pp.dst = append(*pp.dst, s)
		}
	}
	any := false
	for i := range p1 {
		any = any || p1[i].n > 0 || p16[i].n > 0
	}
	if !any {
		return ""
	}
	return barChart("Throughput, one server core each", "redis-benchmark -c 50 -r 100000; median of the rounds, whisker = min–max",
		"requests per second", cats, []barSeries{
			{name: "-P 1", color: "#9ecae1", values: p1},
			{name: "-P 16", color: "#1f6fd1", values: p16},
		})
}

func connsChart(res results) string {
	conns := distinct(res.rows, func(r row) bool { return r.phase == "conns" }, func(r row) int { return r.clients })
	if len(conns) == 0 {
		return ""
	}
	var series []lineSeries
	for _, s := range [][3]string{
		{"turnstile", "CL.THROTTLE", "Turnstile CL.THROTTLE"},
		{"redis", "INCR", "Redis INCR"},
		{"redis", "Lua GCRA", "Redis Lua GCRA"},
	} {
		ls := lineSeries{name: s[2], color: colors[s[0]+"/"+s[1]], dashed: s[0] == "redis"}
		for _, c := range conns {
			if k, ok := res.find("conns", s[0], s[1], 1, c, 0); ok {
				st, _ := res.metric(k, rps)
				ls.points = append(ls.points, point{float64(c), st})
			}
		}
		series = append(series, ls)
	}
	xs := make([]float64, len(conns))
	for i, c := range conns {
		xs[i] = float64(c)
	}
	return lineChart("Throughput by connection count", "redis-benchmark -P 1 -r 100000 -c N; median of the rounds, whisker = min–max",
		"connections (-c, log scale)", "requests per second", xs,
		func(v float64) string { return strconv.Itoa(int(v)) }, series)
}

func keysChart(res results) string {
	phase := "keys"
	counts := distinct(res.rows, func(r row) bool { return r.phase == "keys" && r.rps == 0 }, func(r row) int { return r.keys })
	if len(counts) == 0 {
		return ""
	}
	var series []lineSeries
	for _, s := range []struct {
		server, workload, name, color string
		heap                          bool
	}{
		{"turnstile", "CL.THROTTLE k 0 1 3600", "Turnstile RSS", "#1f6fd1", false},
		{"redis", "SET k ns PX 3600000", "Redis RSS", "#d62728", false},
		{"turnstile", "CL.THROTTLE k 0 1 3600", "Turnstile heap", "#7fb0ea", true},
		{"redis", "SET k ns PX 3600000", "Redis used_memory", "#ff9896", true},
	} {
		ls := lineSeries{name: s.name, color: s.color, dashed: s.heap}
		for _, n := range counts {
			if k, ok := res.find(phase, s.server, s.workload, 0, 0, n); ok {
				r := res.groups[k][0]
				v := r.rssPerKey()
				if s.heap {
					v = r.heapPerKey()
				}
				ls.points = append(ls.points, point{float64(n), spread{med: v, min: v, max: v, n: 1}})
			}
		}
		series = append(series, ls)
	}
	xs := make([]float64, len(counts))
	for i, c := range counts {
		xs[i] = float64(c)
	}
	return lineChart("Memory per live key", "growth after loading N distinct 16-byte keys into a fresh server, divided by N",
		"live keys (log scale)", "bytes per key", xs, func(v float64) string { return fmtKeys(int(v)) }, series)
}
