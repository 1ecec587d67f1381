package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// row is one line of results.csv: one redis-benchmark run (rps and
// latencies), one memory measurement (RSS and used_memory around a load), or
// one timed persistence operation (SAVE, a restart's load, BGREWRITEAOF:
// seconds, file size, the load time the server logged).
type row struct {
	round     int
	server    string
	workload  string
	pipeline  int
	clients   int
	rps       float64
	p50       float64
	p99       float64
	p999      float64
	phase     string
	keys      int
	requests  int
	seconds   float64 // wall time of the run
	cpu       float64 // CPU seconds the server process used during the run
	rssBefore float64
	rssAfter  float64
	memBefore float64
	memAfter  float64
	// Persistence part (PERSIST=1); optional columns.
	fileBytes  float64 // snapshot or log size
	serverSecs float64 // load time the server logged
	bgsaves    int     // snapshots completed during a benchmark run
	// Expiry part (EXPIRE=1); optional column.
	rssPeak    float64 // highest RSS seen while the keys were loaded
	rssPreload float64 // RSS just before loading them (after the baseline probe)
}

// rssPerKey and heapPerKey are the growth per loaded key, in bytes.
func (r row) rssPerKey() float64  { return (r.rssAfter - r.rssBefore) / float64(r.keys) }
func (r row) heapPerKey() float64 { return (r.memAfter - r.memBefore) / float64(r.keys) }

// perCPU is requests per CPU-second of the server process: less sensitive
// than req/s to other work taking the server's core away.
func (r row) perCPU() float64 {
	if r.cpu <= 0 {
		return 0
	}
	return float64(r.requests) / r.cpu
}

// cpuShare is the server's CPU time over the run's wall time (1.0 = a full core).
func (r row) cpuShare() float64 {
	if r.seconds <= 0 {
		return 0
	}
	return r.cpu / r.seconds
}

func readCSV(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"round", "server", "workload", "pipeline", "clients", "rps", "p50", "p99", "p999",
		"phase", "keys", "requests", "rss_before", "rss_after", "used_before", "used_after", "seconds", "server_cpu_s"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no column %q", path, need)
		}
	}
	opt := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return rec[i]
		}
		return ""
	}
	var rows []row
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var perr error
		num := func(name string) float64 {
			s := strings.TrimSpace(opt(rec, name))
			if s == "" {
				return 0
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("%s:%d: column %s: %w", path, line, name, err)
			}
			return v
		}
		r := row{
			round:     int(num("round")),
			server:    rec[col["server"]],
			workload:  rec[col["workload"]],
			pipeline:  int(num("pipeline")),
			clients:   int(num("clients")),
			rps:       num("rps"),
			p50:       num("p50"),
			p99:       num("p99"),
			p999:      num("p999"),
			phase:     rec[col["phase"]],
			keys:      int(num("keys")),
			requests:  int(num("requests")),
			seconds:   num("seconds"),
			cpu:       num("server_cpu_s"),
			rssBefore: num("rss_before"),
			rssAfter:  num("rss_after"),
			memBefore: num("used_before"),
			memAfter:  num("used_after"),

			fileBytes:  num("file_bytes"),
			serverSecs: num("server_s"),
			bgsaves:    int(num("bgsaves")),

			rssPeak:    num("rss_peak"),
			rssPreload: num("rss_preload"),
		}
		if perr != nil {
			return nil, perr
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// meta is the "name: value" machine description run.sh writes.
type meta struct {
	names  []string
	values map[string]string
}

func readMeta(path string) (meta, error) {
	m := meta{values: map[string]string{}}
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		if _, dup := m.values[name]; !dup {
			m.names = append(m.names, name)
		}
		m.values[name] = value
	}
	return m, sc.Err()
}

// command is one exact command line run.sh ran, with what it measured.
type command struct {
	phase, server, workload, pipeline, clients, keys, line string
}

// readCommands reads commands.tsv and keeps the first line per measurement
// (rounds repeat the same commands).
func readCommands(path string) ([]command, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cmds []command
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 7)
		if len(f) != 7 {
			continue
		}
		c := command{f[0], f[1], f[2], f[3], f[4], f[5], f[6]}
		id := strings.Join(f[:6], "\t")
		if seen[id] {
			continue
		}
		seen[id] = true
		cmds = append(cmds, c)
	}
	return cmds, sc.Err()
}

// spread is the median and range of one metric over the rounds.
type spread struct {
	med, min, max float64
	n             int
}

func summarize(vs []float64) spread {
	if len(vs) == 0 {
		return spread{}
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{med: m, min: s[0], max: s[len(s)-1], n: len(s)}
}

// key identifies one measured configuration across rounds.
type key struct {
	phase, server, workload string
	pipeline, clients, keys int
}

func keyOf(r row) key {
	return key{r.phase, r.server, r.workload, r.pipeline, r.clients, r.keys}
}

// results groups the rows by configuration.
type results struct {
	rows   []row
	groups map[key][]row
}

func group(rows []row) results {
	res := results{rows: rows, groups: map[key][]row{}}
	for _, r := range rows {
		k := keyOf(r)
		res.groups[k] = append(res.groups[k], r)
	}
	return res
}

// metric summarizes f over the rounds of configuration k.
func (res results) metric(k key, f func(row) float64) (spread, bool) {
	rs := res.groups[k]
	if len(rs) == 0 {
		return spread{}, false
	}
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	return summarize(vs), true
}

// ratio summarizes a/b per round (both measured in the same round, so
// machine noise shared by the round cancels) and the ratio of the medians.
func (res results) ratio(a, b key, f func(row) float64) (perRound spread, ofMedians float64, ok bool) {
	sa, okA := res.metric(a, f)
	sb, okB := res.metric(b, f)
	if !okA || !okB || sb.med == 0 {
		return spread{}, 0, false
	}
	byRound := map[int]float64{}
	for _, r := range res.groups[b] {
		byRound[r.round] = f(r)
	}
	var vs []float64
	for _, r := range res.groups[a] {
		if d, ok := byRound[r.round]; ok && d != 0 {
			vs = append(vs, f(r)/d)
		}
	}
	return summarize(vs), sa.med / sb.med, true
}

// distinct returns the sorted distinct values of f over rows that pass keep.
func distinct(rows []row, keep func(row) bool, f func(row) int) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range rows {
		if !keep(r) {
			continue
		}
		if v := f(r); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Ints(out)
	return out
}
