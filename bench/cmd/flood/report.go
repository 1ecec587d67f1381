package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/turnstile/turnstile/bench/internal/benchfmt"
)

// The MEMORY.md part: the machine and the command, one table row per
// policy, the chart, and a reading of the figures that names the policy to
// use for a limiter. Written from the results alone, so it says what this
// run measured. The first heading is a level-1 heading: bench/cmd/report
// appends the file to RESULTS.md one level down.

// rssTarget is the bound: RSS at most 10% above maxmemory.
const rssTarget = 1.10

// meta is what the report says about the run besides the results.
type meta struct {
	started   time.Time
	loadStart string // /proc/loadavg at the start and the end
	loadEnd   string
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func mibs(n int64) string { return fmt.Sprintf("%.1f", float64(n)/mib) }

// thousands formats n with commas.
func thousands(n int64) string { return benchfmt.Thousands(n) }

func markdown(cfg *config, m meta, results []result) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	maxmemBytes, _ := parseBytes(cfg.maxmem)
	setKind := "no expiry"
	if cfg.setEx > 0 {
		setKind = fmt.Sprintf("EX %d", cfg.setEx)
	}
	e := cfg.hotQuota.emission()
	p("# Memory limits: a random-key flood against maxmemory, per policy (bench/flood.sh)\n\n")
	p("%s, %d CPUs (%s), %s; load average %s at the start, %s at the end.\n",
		m.started.UTC().Format("2006-01-02"), runtime.NumCPU(), cpuModel(), runtime.Version(), m.loadStart, m.loadEnd)
	p("Command: `%s`.\n\n", cfg.command)
	p("Each policy gets a fresh `turnstile --maxmemory %s --maxmemory-policy <policy> --save \"\"%s` (%s bytes) and, at the same time:\n\n",
		cfg.maxmem, strings.Join(append([]string{""}, cfg.extra...), " "), thousands(maxmemBytes))
	p("- **the flood**: %s distinct keys on %d connections, pipelined %d at a time, as fast as the server answers%s: "+
		"%.0f%% `CL.THROTTLE flood:<id> 10 100 86400` (a 1-day period: no flood key expires during the run, only eviction frees memory), "+
		"%.0f%% `SET big:<id> <%d bytes>` (%s); at most %s per policy;\n",
		thousands(cfg.keys), cfg.floodConns, cfg.batch, rateNote(cfg), (1-cfg.setShare)*100, cfg.setShare*100, cfg.valueSize, setKind, cfg.timeCap)
	p("- **%d hot limited clients**: `CL.THROTTLE hot:<i> %d %d %d` every %s each (on %d connections), far above their limit. "+
		"A correct limiter allows a key at most %d requests at once and one more every %s: %d + ⌊elapsed / %s⌋ (+1 for the boundary). "+
		"What a key was allowed beyond that is **forgiven**: requests let through early because its bucket was evicted. "+
		"A hot key counts as **evicted** when `remaining` in a reply jumps by more than the tokens that came due since its last request;\n",
		cfg.hot, cfg.hotQuota.burst, cfg.hotQuota.count, cfg.hotQuota.period, cfg.hotEvery, cfg.hotConns,
		cfg.hotQuota.burst+1, e, cfg.hotQuota.burst+1, e)
	p("- **a probe**: `GET probe` (a key set before the flood) every %s on its own connection; a **stall** is a round trip over %s;\n", cfg.probeEvery, cfg.stall)
	p("- **RSS**: `VmRSS` of the server every %s, and `INFO` `used_memory`/`evicted_keys` every 0.5 s. "+
		"\"Max RSS\" is taken from the moment the limit was first reached (used memory at maxmemory, a key evicted or an OOM error); target: at most %.2f × maxmemory.\n\n",
		cfg.sampleEvery, rssTarget)

	p("| policy | keys sent | flood s | evicted | OOM errors | other errors | forgiven | hot keys evicted | hot OOM | max RSS MiB | RSS / maxmemory | used_memory MiB | probe p99 ms | probe max ms | stalls > %s | probe misses |\n", cfg.stall)
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		if r.failure != "" {
			p("| %s | failed: %s |||||||||||||||\n", r.policy, strings.ReplaceAll(r.failure, "|", "/"))
			continue
		}
		flag := ""
		if r.timedOut {
			flag = " (cap)"
		}
		if r.crashed {
			flag += " **crashed**"
		}
		p("| %s | %s | %.1f%s | %s | %s | %s | %s | %d / %d | %s | %s | %.2f | %s | %.2f | %.1f | %d | %s |\n",
			r.policy, thousands(r.sent), r.duration.Seconds(), flag, thousands(r.evicted), thousands(r.oom), thousands(r.other),
			thousands(r.forgiven), r.hotEvicted, r.hotKeys, thousands(r.hotOOM), mibs(r.maxRSSAfter), r.rssRatio(),
			mibs(r.usedMemory), ms(r.probeP99), ms(r.probeMax), r.stalls, thousands(r.probeMisses))
	}
	p("\n")
	if cfg.svgPath != "" {
		// The chart's path as seen from the report's directory.
		rel, err := filepath.Rel(filepath.Dir(cfg.mdPath), cfg.svgPath)
		if err != nil {
			rel = cfg.svgPath
		}
		p("![RSS over time per policy](%s)\n\n", filepath.ToSlash(rel))
	}
	p("Per policy, the flood's own figures are in `bench/out/flood.csv` and RSS over time in `bench/out/flood-series.csv`; " +
		"\"probe misses\" are GETs that found the probe key evicted (the probe never writes it again).\n\n")
	reading(&b, cfg, results)
	return b.String()
}

func rateNote(cfg *config) string {
	if cfg.rate > 0 {
		return fmt.Sprintf(" (capped at %.0f keys/s)", cfg.rate)
	}
	return ""
}

// reading writes what the figures say: the targets, noeviction, and the
// policy that forgave the hot clients least.
func reading(b *strings.Builder, cfg *config, results []result) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var ok []result
	for _, r := range results {
		if r.failure == "" {
			ok = append(ok, r)
		}
	}
	p("## Reading\n\n")
	if len(ok) == 0 {
		p("No policy's run could be measured.\n")
		return
	}

	// RSS.
	var over []string
	lo, hi := ok[0].rssRatio(), ok[0].rssRatio()
	for _, r := range ok {
		lo, hi = min(lo, r.rssRatio()), max(hi, r.rssRatio())
		if r.rssRatio() > rssTarget {
			over = append(over, fmt.Sprintf("%s %.2f", r.policy, r.rssRatio()))
		}
	}
	p("- **RSS**: the max RSS after the limit was reached was %.2f–%.2f × maxmemory; ", lo, hi)
	if len(over) == 0 {
		p("every policy met the %.2f × target.\n", rssTarget)
	} else {
		p("above the %.2f × target: %s.\n", rssTarget, strings.Join(over, ", "))
	}
	if mm, _ := parseBytes(cfg.maxmem); mm < 64*mib {
		p("  (At a maxmemory this small the Go runtime's fixed RSS, the binary and its stacks, is a large part of the ratio; judge the target at 100mb.)\n")
	}

	// Latency and errors.
	var stalls, other, crashed int64
	var worst result
	for _, r := range ok {
		stalls += int64(r.stalls)
		other += r.other + r.hotErrs + r.probeErrs
		if r.crashed {
			crashed++
		}
		if r.probeMax >= worst.probeMax {
			worst = r
		}
	}
	p("- **Other clients**: %s probe round trips over %s in all (target: none); the slowest was %.1f ms (%s). ",
		thousands(stalls), cfg.stall, ms(worst.probeMax), worst.policy)
	p("Errors other than OOM: %s; servers that crashed: %d.\n", thousands(other), crashed)

	// noeviction.
	for _, r := range ok {
		if r.policy != "noeviction" {
			continue
		}
		p("- **noeviction** refused %s of %s flood writes with OOM, and the probe's %s GETs got %s errors. ",
			thousands(r.oom), thousands(r.sent), thousands(int64(r.probes)), thousands(r.probeErrs))
		if r.hotOOM > 0 {
			p("The hot clients' `CL.THROTTLE` on their existing buckets was refused too (%s of %s requests got OOM): "+
				"at the limit such a server cannot answer a limiter at all, and the client's fallback (fail open or closed) decides.", thousands(r.hotOOM), thousands(r.hotSent))
		}
		p("\n")
	}

	// OOM errors where every key could have been evicted: the server gave
	// up evicting while there were victims left.
	var needless []string
	for _, r := range ok {
		everyKeyEvictable := strings.HasPrefix(r.policy, "allkeys-") ||
			(strings.HasPrefix(r.policy, "volatile-") && (cfg.setEx > 0 || cfg.setShare == 0))
		if everyKeyEvictable && r.oom+r.hotOOM > 0 {
			needless = append(needless, fmt.Sprintf("%s %s", r.policy, thousands(r.oom+r.hotOOM)))
		}
	}
	if len(needless) > 0 {
		p("- **OOM errors under an evicting policy** with every key a candidate (there should be none): %s.\n", strings.Join(needless, ", "))
	}

	// Volatile policies that ran out of victims.
	var starved []string
	for _, r := range ok {
		if strings.HasPrefix(r.policy, "volatile-") && r.oom > 0 {
			starved = append(starved, fmt.Sprintf("%s %s", r.policy, thousands(r.oom)))
		}
	}
	if len(starved) > 0 {
		p("- **volatile policies** evict only keys with an expiry; the SET keys (%s) are not candidates, so once they filled memory writes were refused with OOM (%s).\n",
			map[bool]string{true: "no expiry", false: fmt.Sprintf("EX %d", cfg.setEx)}[cfg.setEx == 0], strings.Join(starved, ", "))
	}

	// Forgiven requests, and the recommendation.
	var evicting []result
	for _, r := range ok {
		if r.policy != "noeviction" {
			evicting = append(evicting, r)
		}
	}
	if len(evicting) == 0 {
		return
	}
	slices.SortStableFunc(evicting, func(a, b result) int {
		if a.forgiven != b.forgiven {
			return int(a.forgiven - b.forgiven)
		}
		return a.hotEvicted - b.hotEvicted
	})
	var list []string
	bLo, bHi := evicting[0].hotBound, evicting[0].hotBound
	for _, r := range evicting {
		item := fmt.Sprintf("%s %s (%d of %d keys evicted", r.policy, thousands(r.forgiven), r.hotEvicted, r.hotKeys)
		if r.hotOOM > 0 {
			// Refused requests were not allowed either: the count is low
			// because the limiter was not answering.
			item += fmt.Sprintf("; %s hot requests refused with OOM", thousands(r.hotOOM))
		}
		list = append(list, item+")")
		bLo, bHi = min(bLo, r.hotBound), max(bHi, r.hotBound)
	}
	bounds := fmt.Sprint(bLo)
	if bHi > bLo {
		bounds = fmt.Sprintf("%d–%d", bLo, bHi)
	}
	p("- **Forgiven requests** of the %d hot clients, fewest first: %s. A correct limiter allowed the median hot key at most %s requests over its run (the bound grows with the run's length).\n",
		cfg.hot, strings.Join(list, ", "), bounds)

	var fit []result
	var unfit []string
	for _, r := range evicting {
		if !r.crashed && r.other == 0 && r.hotOOM == 0 && r.hotErrs == 0 {
			fit = append(fit, r)
		} else {
			unfit = append(unfit, r.policy)
		}
	}
	p("\n**For a rate limiter**: ")
	if len(fit) == 0 {
		p("no evicting policy ran without errors or OOM refusals for the hot clients in this run; see the table.\n")
		return
	}
	best := fit[0]
	if len(evicting) == 1 {
		p("only one evicting policy ran; ")
	}
	p("`%s`: its hot clients were forgiven %s requests (%d of %d hot keys evicted)", best.policy, thousands(best.forgiven), best.hotEvicted, best.hotKeys)
	switch n := len(fit); {
	case n == 2:
		p(", against %s for `%s`", thousands(fit[1].forgiven), fit[1].policy)
	case n > 2:
		p(", against %s for `%s` and %s for `%s`", thousands(fit[1].forgiven), fit[1].policy, thousands(fit[n-1].forgiven), fit[n-1].policy)
	}
	p("; RSS %.2f × maxmemory, probe p99 %.2f ms.", best.rssRatio(), ms(best.probeP99))
	if len(unfit) > 0 {
		p(" (Not considered, because the hot clients got OOM or errors or the server failed: %s.)", strings.Join(unfit, ", "))
	}
	p("\n")
	p("%s\n", why(best.policy))
}

// why explains what a policy does to a limiter's buckets.
func why(policy string) string {
	switch {
	case strings.HasSuffix(policy, "-lfu"):
		return "An LFU policy keeps the keys used most often: a client that keeps asking keeps its bucket's counter high, " +
			"while a flood key used once starts at the lowest counter, so the flood evicts its own keys first. " +
			"Evicting a bucket forgives at most its TTL (the time until it is full again), but it is the busiest, most limited clients that an eviction would forgive most."
	case strings.HasSuffix(policy, "-lru"):
		return "An LRU policy keeps the keys used most recently: a client that keeps asking keeps its bucket, while the flood's one-shot keys age. " +
			"Its clock has one-second resolution, so keys touched within the same second tie, and a fast flood can still evict a hot bucket."
	case policy == "volatile-ttl":
		return "volatile-ttl evicts the key whose expiry is nearest; for a GCRA key that is the bucket that is full soonest, so each eviction forgives the least time; " +
			"but with mixed quotas a short-period limit (the hot clients' minute) is nearer its expiry than a long one (the flood's day), and goes first."
	case strings.HasSuffix(policy, "-random"):
		return "A random policy evicts every key alike, so each hot bucket goes at its share of the keys: it forgives in proportion to the flood's rate."
	}
	return ""
}
