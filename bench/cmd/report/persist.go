package main

import (
	"fmt"
	"strings"
)

// The persistence part (run.sh with PERSIST=1; issue 4's proof bullets).
//
// CSV phases:
//   - persist: redis-benchmark runs; workload "<command> [<policy>]" with the
//     policies below, all servers with --save ''.
//   - snapshot: timed operations at some key count: "SAVE", "load snapshot",
//     "load AOF (as written)", "BGREWRITEAOF", "load AOF (rewritten)"
//     (seconds = wall time; file_bytes; server_s = the load time the server
//     logged).
//   - snaplat: -P 1 runs over loaded keys, "<command> [idle]" and
//     "<command> [BGSAVE loop]" (bgsaves = snapshots completed in the run).

const chartPersist = "persistence.svg"

var persistPolicies = []struct {
	policy string  // as in the workload name
	label  string  // for tables
	target float64 // issue 4's minimum ratio to no persistence (0: none)
}{
	{"appendonly no", "no persistence", 0},
	{"appendfsync everysec", "appendfsync everysec", 0.8},
	{"appendfsync always", "appendfsync always", 0.3},
}

var persistWorkloads = []struct{ server, workload, label, short string }{
	{"turnstile", "CL.THROTTLE", "Turnstile `CL.THROTTLE k 15 30 60`", "Turnstile CL.THROTTLE"},
	{"turnstile", "INCR", "Turnstile `INCR k`", "Turnstile INCR"},
	{"redis", "INCR", "Redis `INCR k`", "Redis INCR"},
}

func policyWorkload(workload, policy string) string { return workload + " [" + policy + "]" }

func serverName(s string) string {
	if s == "redis" {
		return "Redis"
	}
	return "Turnstile"
}

func seconds(r row) float64    { return r.seconds }
func serverSecs(r row) float64 { return r.serverSecs }
func fileBytes(r row) float64  { return r.fileBytes }
func bgsaves(r row) float64    { return float64(r.bgsaves) }

func fmtSecs(s spread) string {
	f := func(v float64) string {
		if v < 0.1 {
			return fmt.Sprintf("%.3f", v)
		}
		return fmt.Sprintf("%.2f", v)
	}
	if s.n <= 1 {
		return f(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.min), f(s.max))
}

func hasPhase(res results, phases ...string) bool {
	for _, r := range res.rows {
		for _, p := range phases {
			if r.phase == p {
				return true
			}
		}
	}
	return false
}

// policyRatio is the per-round ratio of policy to no persistence.
func policyRatio(res results, server, workload string, pipeline int, policy string) (spread, float64, bool) {
	a, okA := res.find("persist", server, policyWorkload(workload, policy), pipeline, 0, 0)
	b, okB := res.find("persist", server, policyWorkload(workload, "appendonly no"), pipeline, 0, 0)
	if !okA || !okB {
		return spread{}, 0, false
	}
	return res.ratio(a, b, rps)
}

func persistSection(b *strings.Builder, res results, m meta, cmds []command, charts map[string]string) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if !hasPhase(res, "persist", "snapshot", "snaplat") {
		w("## Persistence\n\nNot run (opt in with `PERSIST=1`).\n\n")
		return
	}
	w("## Persistence (issue 4)\n\n")
	w("Every server here has its own fresh data directory under `bench/out/persist`, on the disk the\n")
	w("repository is on (not a tmpfs): %s. %s.\n", orUnknown(m.values["persistence files"]),
		"Small synchronous writes there cost "+orUnknown(m.values["disk sync writes"]))
	w("All servers run with `--save ''`, so no snapshot rule fires during a measurement.\n\n")

	persistTargets(b, res)
	persistThroughput(b, res, charts)
	persistFiles(b, res)
	persistLatency(b, res)

	w("### Commands (persistence)\n\n")
	w("Exactly as run (ports and data directories are this run's; each round starts fresh servers on fresh\n")
	w("directories, with the same flags). Throughput runs are preceded by `FLUSHALL`; the latency runs keep\n")
	w("the loaded keys.\n\n")
	for _, p := range []struct{ phase, title string }{
		{"persist", "Throughput by policy"}, {"snapshot", "Snapshot, log rewrite and load"}, {"snaplat", "Latency during snapshots"},
	} {
		var lines []string
		for _, c := range cmds {
			if c.phase == p.phase {
				lines = append(lines, c.line)
			}
		}
		if len(lines) > 0 {
			w("%s:\n\n```sh\n%s\n```\n\n", p.title, strings.Join(lines, "\n"))
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func persistTargets(b *strings.Builder, res results) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("### Targets\n\n")
	w("Throughput ratios are the median over the rounds of the ratio to the same command without\n")
	w("persistence measured in the same round (range over the rounds in brackets).\n\n")
	w("| target | measured | |\n|---|---|---|\n")
	for _, pp := range persistPolicies {
		if pp.target == 0 {
			continue
		}
		for _, pw := range persistWorkloads {
			if pw.server != "turnstile" {
				continue
			}
			for _, p := range []int{1, 16} {
				target := fmt.Sprintf("%s at -P %d with `%s` ≥ %.1f× no persistence", pw.label, p, pp.policy, pp.target)
				pr, om, ok := policyRatio(res, pw.server, pw.workload, p, pp.policy)
				if !ok {
					w("| %s | not measured | |\n", target)
					continue
				}
				w("| %s | %s | %s |\n", target, fmtRatio(pr, om), verdict(bestRatio(pr, om) >= pp.target))
			}
		}
	}
	idle, ok1 := res.find("snaplat", "turnstile", "CL.THROTTLE [idle]", 1, 0, 0)
	busy, ok2 := res.find("snaplat", "turnstile", "CL.THROTTLE [BGSAVE loop]", 1, 0, 0)
	target := "Turnstile p99 during snapshots ≤ 2× normal"
	if ok1 && ok2 {
		target += fmt.Sprintf(" (%s keys)", fmtKeys(idle.keys))
		pr, om, _ := res.ratio(busy, idle, p99)
		a, _ := res.metric(busy, p99)
		c, _ := res.metric(idle, p99)
		w("| %s | %s; p99 %.3f ms vs %.3f ms idle (medians) | %s |\n", target, fmtRatio(pr, om), a.med, c.med, verdict(bestRatio(pr, om) <= 2))
	} else {
		w("| %s | not measured | |\n", target)
	}
	for _, n := range distinct(res.rows, func(r row) bool { return r.phase == "snapshot" }, func(r row) int { return r.keys }) {
		save, okS := res.find("snapshot", "turnstile", "SAVE", 0, 0, n)
		load, okL := res.find("snapshot", "turnstile", "load snapshot", 0, 0, n)
		if !okS || !okL {
			continue
		}
		s, _ := res.metric(save, seconds)
		l, _ := res.metric(load, seconds)
		w("| snapshot and load time at %s keys recorded | `SAVE` %s s, restart until loaded %s s | recorded |\n",
			fmtKeys(n), fmtSecs(s), fmtSecs(l))
	}
	w("\n")
}

func persistThroughput(b *strings.Builder, res results, charts map[string]string) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	any, ok := res.find("persist", "turnstile", policyWorkload("CL.THROTTLE", "appendonly no"), 1, 0, 0)
	if !ok {
		return
	}
	w("### Throughput by persistence policy (requests/s, `redis-benchmark -c %d -r %d`)\n\n", any.clients, any.keys)
	w("Policies: `--appendonly no` (no persistence), `--appendonly yes --appendfsync everysec` and\n")
	w("`--appendonly yes --appendfsync always`, the same flags for both servers. × = ratio to no persistence\n")
	w("in the same round. Redis is there for context: the same policies cost it this much.\n\n")
	w("| server and command | -P | no persistence | appendfsync everysec | × | appendfsync always | × |\n")
	w("|---|---|---|---|---|---|---|\n")
	for _, pw := range persistWorkloads {
		for _, p := range []int{1, 16} {
			w("| %s | %d", pw.label, p)
			for _, pp := range persistPolicies {
				k, ok := res.find("persist", pw.server, policyWorkload(pw.workload, pp.policy), p, 0, 0)
				if !ok {
					w(" | –")
					if pp.target > 0 {
						w(" | –")
					}
					continue
				}
				s, _ := res.metric(k, rps)
				w(" | %s", fmtRPS(s))
				if pp.target > 0 {
					pr, om, ok := policyRatio(res, pw.server, pw.workload, p, pp.policy)
					if ok {
						w(" | %s", fmtRatio(pr, om))
					} else {
						w(" | –")
					}
				}
			}
			w(" |\n")
		}
	}
	w("\n")
	if charts[chartPersist] != "" {
		w("![Throughput with persistence, ratio to none](%s)\n\n", chartPersist)
	}
	w("Requests per CPU-second of the server process (user + system), × = ratio to no persistence in the\n")
	w("same round. This is what the log costs in work (encoding, `write`, `fsync` calls), and is less moved\n")
	w("by other load on the machine than req/s; time spent waiting for the disk is not in it.\n\n")
	w("| server and command | -P | no persistence | appendfsync everysec | × | appendfsync always | × |\n")
	w("|---|---|---|---|---|---|---|\n")
	for _, pw := range persistWorkloads {
		for _, p := range []int{1, 16} {
			base, okB := res.find("persist", pw.server, policyWorkload(pw.workload, "appendonly no"), p, 0, 0)
			w("| %s | %d", pw.label, p)
			for _, pp := range persistPolicies {
				k, ok := res.find("persist", pw.server, policyWorkload(pw.workload, pp.policy), p, 0, 0)
				if !ok {
					w(" | –")
					if pp.target > 0 {
						w(" | –")
					}
					continue
				}
				s, _ := res.metric(k, perCPU)
				w(" | %s", fmtRPS(s))
				if pp.target > 0 {
					if pr, om, ok := res.ratio(k, base, perCPU); okB && ok {
						w(" | %s", fmtRatio(pr, om))
					} else {
						w(" | –")
					}
				}
			}
			w(" |\n")
		}
	}
	w("\n")
	w("Latency at -P 1 (ms, p50 / p99 / p99.9):\n\n")
	w("| server and command | no persistence | appendfsync everysec | appendfsync always |\n|---|---|---|---|\n")
	for _, pw := range persistWorkloads {
		w("| %s", pw.label)
		for _, pp := range persistPolicies {
			k, ok := res.find("persist", pw.server, policyWorkload(pw.workload, pp.policy), 1, 0, 0)
			if !ok {
				w(" | –")
				continue
			}
			a, _ := res.metric(k, p50)
			c, _ := res.metric(k, p99)
			d, _ := res.metric(k, p999)
			w(" | %.3f / %.3f / %.3f", a.med, c.med, d.med)
		}
		w(" |\n")
	}
	w("\n")
}

func persistFiles(b *strings.Builder, res results) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	counts := distinct(res.rows, func(r row) bool { return r.phase == "snapshot" }, func(r row) int { return r.keys })
	if len(counts) == 0 {
		return
	}
	get := func(server, workload string, n int, f func(row) float64) (spread, bool) {
		k, ok := res.find("snapshot", server, workload, 0, 0, n)
		if !ok {
			return spread{}, false
		}
		return res.metric(k, f)
	}
	cell := func(s spread, ok bool, format func(spread) string) string {
		if !ok {
			return "–"
		}
		return format(s)
	}
	bytesCell := func(s spread, ok bool, n int) string {
		if !ok || s.med == 0 {
			return "–"
		}
		return fmt.Sprintf("%s (%.1f B/key)", fmtBytes(s.med), s.med/float64(n))
	}

	w("### Snapshot and load\n\n")
	w("A fresh server (`--appendonly no --save ''`), keys loaded with `loadgen | redis-cli --pipe` (Turnstile\n")
	w("`CL.THROTTLE <key> 0 1 3600`, Redis `SET <key> <19-digit ns> PX 3600000`, as in the memory table).\n")
	w("Each round: `SAVE`, timed by the wall clock around `redis-cli SAVE`; then SIGTERM and a restart on the\n")
	w("same directory, timed from just before the start until `EXISTS key:000000000000` stops answering\n")
	w("`LOADING` (so it includes process start-up). \"Server log\" is the load time the server itself logs\n")
	w("(Turnstile `snapshot loaded ... seconds=`, Redis `DB loaded from disk: ... seconds`).\n\n")
	w("| server | keys | `SAVE` (s) | snapshot file | restart until loaded (s) | server log (s) |\n|---|---|---|---|---|---|\n")
	for _, n := range counts {
		for _, srv := range []string{"turnstile", "redis"} {
			save, okS := get(srv, "SAVE", n, seconds)
			size, okZ := get(srv, "SAVE", n, fileBytes)
			load, okL := get(srv, "load snapshot", n, seconds)
			slog, okG := get(srv, "load snapshot", n, serverSecs)
			if !okS && !okL {
				continue
			}
			w("| %s | %s | %s | %s | %s | %s |\n", serverName(srv), fmtKeys(n), cell(save, okS, fmtSecs),
				bytesCell(size, okZ, n), cell(load, okL, fmtSecs), cell(slog, okG && slog.med > 0, fmtSecs))
		}
	}
	w("\n")

	w("### Append-only log: rewrite and load\n\n")
	w("A fresh server with `--appendonly yes --appendfsync everysec --auto-aof-rewrite-percentage 0 --save ''`,\n")
	w("the same keys loaded through it. Then one restart on the log as written (one record per loading\n")
	w("command), and each round `BGREWRITEAOF` (from sending it until `INFO persistence` shows\n")
	w("`aof_rewrite_in_progress:0`) and a restart on the rewritten log, timed as above. Sizes are all the\n")
	w("files in the data directory just before the restart. Redis 7 writes its rewritten base as RDB\n")
	w("(`aof-use-rdb-preamble yes`, the default).\n\n")
	w("| server | keys | log as written | load it (s) | `BGREWRITEAOF` (s) | rewritten log | load it (s) | server log (s) |\n")
	w("|---|---|---|---|---|---|---|---|\n")
	for _, n := range counts {
		for _, srv := range []string{"turnstile", "redis"} {
			wsize, okWZ := get(srv, "load AOF (as written)", n, fileBytes)
			wload, okW := get(srv, "load AOF (as written)", n, seconds)
			rw, okR := get(srv, "BGREWRITEAOF", n, seconds)
			rsize, okRZ := get(srv, "load AOF (rewritten)", n, fileBytes)
			rload, okL := get(srv, "load AOF (rewritten)", n, seconds)
			slog, okG := get(srv, "load AOF (rewritten)", n, serverSecs)
			if !okW && !okR && !okL {
				continue
			}
			w("| %s | %s | %s | %s | %s | %s | %s | %s |\n", serverName(srv), fmtKeys(n), bytesCell(wsize, okWZ, n),
				cell(wload, okW, fmtSecs), cell(rw, okR, fmtSecs), bytesCell(rsize, okRZ, n), cell(rload, okL, fmtSecs),
				cell(slog, okG && slog.med > 0, fmtSecs))
		}
	}
	w("\n")
}

func persistLatency(b *strings.Builder, res results) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if !hasPhase(res, "snaplat") {
		return
	}
	any, _ := res.find("snaplat", "turnstile", "CL.THROTTLE [idle]", 1, 0, 0)
	w("### Latency during snapshots (-P 1, `-c %d`, ms)\n\n", any.clients)
	w("The snapshot server above, with its %s keys, right after the load timings. Each round runs the\n", fmtKeys(any.keys))
	w("command once idle and once while `BGSAVE` runs back to back for the whole run (`bench/cmd/benchctl\n")
	w("bgsave-loop`: `BGSAVE`, poll `INFO persistence` every 10 ms until `rdb_bgsave_in_progress:0`, repeat),\n")
	w("alternating which goes first. The calls write the loaded keys (`-r %d`), so each snapshot has to\n", any.keys)
	w("preserve the old values while they change: Turnstile `CL.THROTTLE key:__rand_int__ 1000000 1 3600` (a\n")
	w("limit every call passes, as in the key-scaling part), Redis `INCR key:__rand_int__` on the loaded values.\n")
	w("× idle = ratio to the idle run of the same round.\n\n")
	w("| server and command | state | req/s | p50 | p99 | p99.9 | snapshots per run | p99 × idle |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range []struct{ server, workload, label string }{
		{"turnstile", "CL.THROTTLE", "Turnstile `CL.THROTTLE k 1000000 1 3600`"},
		{"redis", "INCR", "Redis `INCR k`"},
	} {
		idle, okI := res.find("snaplat", c.server, c.workload+" [idle]", 1, 0, 0)
		for _, state := range []string{"idle", "BGSAVE loop"} {
			k, ok := res.find("snaplat", c.server, c.workload+" ["+state+"]", 1, 0, 0)
			if !ok {
				continue
			}
			r, _ := res.metric(k, rps)
			a, _ := res.metric(k, p50)
			d, _ := res.metric(k, p99)
			e, _ := res.metric(k, p999)
			snaps, ratio := "–", "–"
			if state != "idle" {
				s, _ := res.metric(k, bgsaves)
				snaps = fmt.Sprintf("%.0f", s.med)
				if s.n > 1 && s.min != s.max {
					snaps += fmt.Sprintf(" (%.0f–%.0f)", s.min, s.max)
				}
				if okI {
					if pr, om, ok := res.ratio(k, idle, p99); ok {
						ratio = fmtRatio(pr, om)
					}
				}
			}
			w("| %s | %s | %s | %s | %s | %s | %s | %s |\n", c.label, state, fmtRPS(r), fmtMS(a), fmtMS(d), fmtMS(e), snaps, ratio)
		}
	}
	w("\n")
}

func persistChart(res results) string {
	var cats []string
	var every, always []spread
	for _, pw := range persistWorkloads {
		for _, p := range []int{1, 16} {
			cats = append(cats, fmt.Sprintf("%s\n-P %d", strings.Replace(pw.short, " ", "\n", 1), p))
			for _, s := range []struct {
				policy string
				dst    *[]spread
			}{{"appendfsync everysec", &every}, {"appendfsync always", &always}} {
				pr, om, ok := policyRatio(res, pw.server, pw.workload, p, s.policy)
				switch {
				case !ok:
					pr = spread{}
				case pr.n == 0:
					pr = spread{med: om, min: om, max: om, n: 1}
				}
				*s.dst = append(*s.dst, pr)
			}
		}
	}
	any := false
	for i := range every {
		any = any || every[i].n > 0 || always[i].n > 0
	}
	if !any {
		return ""
	}
	return barChart("Throughput with the append-only log", "ratio to no persistence in the same round; median of the rounds, whisker = min–max",
		"× no persistence", cats, []barSeries{
			{name: "appendfsync everysec", color: "#1f6fd1", values: every},
			{name: "appendfsync always", color: "#d62728", values: always},
		},
		refLine{1, "#777", "none = 1"},
		refLine{0.8, "#1f6fd1", "target 0.8×"},
		refLine{0.3, "#d62728", "target 0.3×"})
}
