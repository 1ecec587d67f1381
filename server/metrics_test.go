package server

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsScrape: /metrics on turnstile-metrics-addr shows the limiter
// decisions per command and per policy, commands, keys and the server's
// state, in Prometheus's text format.
func TestMetricsScrape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(path, []byte(`{"rules": [{"id": "login", "algorithm": "fixed", "limit": 1, "per": "1m"},
		{"id": "probe", "algorithm": "fixed", "limit": 1, "per": "1m", "shadow": true}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, addr, _ := newTestServer(t, func(c *Config) { c.MetricsAddr = "127.0.0.1:0"; c.RLPolicies = path })
	c := dialRaw(t, addr)
	for range 3 {
		c.do("CL.THROTTLE", "k", "1", "1", "60") // burst 2: 2 allowed, 1 denied
	}
	c.do("RL.CHECK", "login", "u1", "probe", "u1")
	c.do("RL.CHECK", "login", "u2", "probe", "u2")
	c.do("RL.CHECK", "login", "u2", "probe", "u2") // login denies; probe would have
	c.do("GET", "a", "b")                          // arity: rejected
	for range 40 {
		c.do("GET", "k") // every 16th call of a connection is timed
	}
	resp, err := http.Get("http://" + s.metricsAddr.Load().(string) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`turnstile_limiter_decisions_total{command="cl.throttle",decision="allowed"} 2`,
		`turnstile_limiter_decisions_total{command="cl.throttle",decision="denied"} 1`,
		`turnstile_limiter_decisions_total{command="rl.check",decision="allowed"} 2`,
		`turnstile_limiter_decisions_total{command="rl.check",decision="denied"} 1`,
		`turnstile_policy_decisions_total{decision="allowed",policy="login"} 2`,
		`turnstile_policy_decisions_total{decision="denied",policy="login"} 1`,
		`turnstile_policy_decisions_total{decision="shadow_denied",policy="probe"} 1`,
		`turnstile_commands_total{command="cl.throttle"} 3`,
		`turnstile_command_errors_total{command="get",kind="rejected"} 1`,
		`turnstile_keys{db="0"} 5`, // k and rl:{u1|u2}:{login|probe}
		`turnstile_connected_clients 1`,
		`turnstile_hotkeys_enabled 1`,
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(body) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, re := range []string{
		`turnstile_command_duration_seconds_count\{command="get"\} (16|32|48)`,
		`turnstile_command_duration_seconds_bucket\{command="get",le="\+Inf"\} (16|32|48)`,
	} {
		if !regexp.MustCompile(`(?m)^` + re + `$`).Match(body) {
			t.Errorf("metrics lack %s", re)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
}

// TestGrafanaDashboardMetricsExist: every metric the dashboard in
// dashboards/ queries is one the server exports (histograms by their
// _bucket, _sum and _count series).
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	b, err := os.ReadFile("../dashboards/turnstile-grafana.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	ch := make(chan *prometheus.Desc, 100)
	go func() { metricsCollector{}.Describe(ch); close(ch) }()
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range ch {
		exported[name.FindStringSubmatch(d.String())[1]] = true
	}
	used := regexp.MustCompile(`turnstile_[a-z_]+`)
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range used.FindAllString(tg.Expr, -1) {
				n++
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if s, ok := strings.CutSuffix(m, suffix); ok && exported[s] {
						base = s
					}
				}
				if !exported[base] {
					t.Errorf("panel %q queries %s, which the server does not export", p.Title, m)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d metric references found", n)
	}
}
