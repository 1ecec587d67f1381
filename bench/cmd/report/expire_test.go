package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A results.csv of the expiry part alone (two rounds, both servers), in
// the column order run.sh writes.
const expireCSV = `round,server,workload,pipeline,clients,rps,p50,p99,p999,phase,keys,requests,seconds,server_cpu_s,rss_before,rss_after,used_before,used_after,file_bytes,server_s,bgsaves,rss_peak,rss_preload
1,turnstile,probe idle,1,50,80000,0.3,0.8,1.2,expire,1000,300000,3.7,3.0,,,,,,,,,
1,turnstile,probe expiring,1,50,78000,0.3,1.2,3.0,expire,1000,300000,3.8,3.1,,,,,,,,,
1,turnstile,CL.THROTTLE k 0 1 5,,,,,,,expire,1000000,1000000,4.1,,10000000,11000000,400000,500000,,,,70000000,11000000
1,redis,probe idle,1,50,80000,0.3,0.5,1.0,expire,1000,300000,3.7,3.0,,,,,,,,,
1,redis,probe expiring,1,50,70000,0.3,2.0,3.0,expire,1000,300000,3.9,3.1,,,,,,,,,
1,redis,SET k ns PX 5000,,,,,,,expire,1000000,1000000,8.0,,12000000,20000000,900000,1000000,,,,90000000,13000000
2,turnstile,probe idle,1,50,80000,0.3,1.0,1.2,expire,1000,300000,3.7,3.0,,,,,,,,,
2,turnstile,probe expiring,1,50,78000,0.3,1.5,3.0,expire,1000,300000,3.8,3.1,,,,,,,,,
2,turnstile,CL.THROTTLE k 0 1 5,,,,,,,expire,1000000,1000000,4.3,,10000000,13000000,400000,500000,,,,71000000,12000000
`

func TestExpireReport(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "results.csv")
	metaPath := filepath.Join(dir, "meta.txt")
	cmdPath := filepath.Join(dir, "commands.tsv")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(csvPath, expireCSV)
	write(metaPath, "date: today\n")
	write(cmdPath, "expire\tturnstile\tprobe idle\t1\t50\t1000\ttaskset -c 1 redis-benchmark -h 127.0.0.1 -p 1 -c 50 -n 300000 -r 1000 -P 1 CL.THROTTLE probe:__rand_int__ 15 30 1\n")
	if err := run(csvPath, metaPath, cmdPath, dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// Growth over the RSS before the load 1.0 and 1.083: median +4%: met.
		"| RSS after 10⁶ keys expire within 20% of the RSS before they were loaded | +4% (rounds +0% to +8%)",
		// p99 ratios 1.5 and 1.5.
		"| p99 during mass expiry ≤ 2× p99 before | 1.50× (rounds 1.50–1.50) (1.350 ms vs 0.900 ms) | **met** |",
		"## Expiry",
		"| Turnstile | 1,000,000 | `CL.THROTTLE k 0 1 5` |",
		"`CL.THROTTLE probe:__rand_int__ 15 30 1`",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	if !strings.Contains(string(md), "| RSS after 10⁶ keys expire within 20% of the RSS before they were loaded | +4% (rounds +0% to +8%) (before load 11.0 MiB, peak 67.2 MiB, after 11.4 MiB; +20% (rounds +10% to +30%) of a fresh process's 9.5 MiB) | **met** |") {
		t.Errorf("RSS headline row wrong:\n%s", md)
	}
}

// TestExpireHeadlineJudgesPreloadRSS: the verdict compares with the RSS just
// before the load, not with the fresh process (shown beside it).
func TestExpireHeadlineJudgesPreloadRSS(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     string
	}{
		// A tiny fresh process: after/start is 2x, after/before-load +4%.
		{",10000000,11000000,400000", ",5000000,11000000,400000", "**met**"},
		// Memory not given back: after/before-load +45%.
		{",10000000,13000000,400000", ",10000000,16000000,400000", "**missed**"},
	} {
		csv := strings.ReplaceAll(expireCSV, c.from, c.to)
		if c.want == "**missed**" {
			csv = strings.ReplaceAll(csv, ",10000000,11000000,400000", ",10000000,16000000,400000")
		}
		rows, err := readCSVString(t, csv)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		expireHeadline(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, group(rows))
		first, _, _ := strings.Cut(b.String(), "\n")
		if !strings.HasSuffix(first, c.want+" |") {
			t.Errorf("%s -> %s: want %s:\n%s", c.from, c.to, c.want, first)
		}
	}
}

func TestExpireHeadlineNotJudgedBelowMillion(t *testing.T) {
	csv := strings.ReplaceAll(expireCSV, ",expire,1000000,1000000,", ",expire,100000,100000,")
	rows, err := readCSVString(t, csv)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	expireHeadline(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, group(rows))
	out := b.String()
	if strings.Contains(out, "**met**") || strings.Contains(out, "**missed**") {
		t.Errorf("judged a run with 10⁵ keys:\n%s", out)
	}
	if !strings.Contains(out, "at 10⁵ keys, not 10⁶") {
		t.Errorf("does not say the key count:\n%s", out)
	}
}

func TestExpireHeadlineNotMeasured(t *testing.T) {
	var b strings.Builder
	expireHeadline(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, group(nil))
	if got := strings.Count(b.String(), "not measured (EXPIRE=1)"); got != 2 {
		t.Errorf("want two not-measured rows, got:\n%s", b.String())
	}
}

func readCSVString(t *testing.T, s string) ([]row, error) {
	p := filepath.Join(t.TempDir(), "results.csv")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return readCSV(p)
}
