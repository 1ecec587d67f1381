package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The RSS chart: one line per policy, RSS (MiB) over seconds since its
// flood began, with maxmemory and the 1.10 × target as dashed lines. Plain
// SVG text in the manner of bench/cmd/report/svg.go.

const (
	chartW  = 860
	chartH  = 460
	marginL = 70
	marginR = 24
	marginT = 92
	marginB = 56
)

// policyColors gives each policy a fixed colour: LRU blues, LFU greens,
// random oranges, volatile-ttl purple, noeviction grey.
var policyColors = map[string]string{
	"noeviction":      "#7f7f7f",
	"allkeys-lru":     "#1f6fd1",
	"volatile-lru":    "#7fb0ea",
	"allkeys-lfu":     "#2ca02c",
	"volatile-lfu":    "#98df8a",
	"allkeys-random":  "#ff7f0e",
	"volatile-random": "#ffbb78",
	"volatile-ttl":    "#9467bd",
}

// niceStep returns a round step that divides max into at most about n parts.
func niceStep(max float64, n int) float64 {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		max = 1
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func trimNum(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// rssChart draws the chart; it returns "" when there is no sample.
func rssChart(cfg *config, results []result) string {
	var maxT, maxY float64
	var maxmem float64
	for _, r := range results {
		maxmem = math.Max(maxmem, float64(r.maxmem)/mib)
		for _, s := range r.series {
			maxT = math.Max(maxT, s.t.Seconds())
			maxY = math.Max(maxY, float64(s.rss)/mib)
		}
	}
	if maxT == 0 {
		return ""
	}
	maxY = math.Max(maxY, maxmem*1.1)
	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	f(`<text x="%d" y="22" font-size="16" font-weight="bold">RSS during a random-key flood, per maxmemory-policy</text>`+"\n", marginL)
	f(`<text x="%d" y="40" fill="#555">%s</text>`+"\n", marginL, html.EscapeString(fmt.Sprintf(
		"--maxmemory %s; %s distinct keys per policy (%.0f%% SET of %d B, the rest CL.THROTTLE); VmRSS every %s",
		cfg.maxmem, thousands(cfg.keys), cfg.setShare*100, cfg.valueSize, cfg.sampleEvery)))

	ystep := niceStep(maxY, 6)
	ytop := math.Ceil(maxY/ystep) * ystep
	xstep := niceStep(maxT, 8)
	xtop := math.Ceil(maxT/xstep) * xstep
	plotW, plotH := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	x := func(v float64) float64 { return float64(marginL) + v/xtop*plotW }
	y := func(v float64) float64 { return float64(chartH-marginB) - v/ytop*plotH }
	for v := 0.0; v <= ytop+ystep/2; v += ystep {
		f(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, chartW-marginR, y(v), y(v))
		f(`<text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", marginL-6, y(v)+4, trimNum(v))
	}
	for v := 0.0; v <= xtop+xstep/2; v += xstep {
		f(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#333"/>`+"\n", x(v), x(v), chartH-marginB, chartH-marginB+5)
		f(`<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", x(v), chartH-marginB+19, trimNum(v))
	}
	f(`<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", marginL, marginL, marginT, chartH-marginB)
	f(`<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", marginL, chartW-marginR, chartH-marginB, chartH-marginB)
	f(`<text x="%.1f" y="%d" text-anchor="middle" fill="#333">seconds since the flood began</text>`+"\n", x(xtop/2), chartH-marginB+40)
	f(`<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle" fill="#333">RSS, MiB</text>`+"\n", y(ytop/2))

	type legendItem struct {
		name, color, dash string
	}
	var legend []legendItem
	for _, ref := range []struct {
		v     float64
		label string
		color string
		dash  string
	}{{maxmem, "maxmemory", "#000", "6 4"}, {maxmem * 1.1, "1.10 × maxmemory (target)", "#d62728", "2 3"}} {
		if maxmem == 0 {
			break
		}
		f(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="%s"/>`+"\n",
			marginL, chartW-marginR, y(ref.v), y(ref.v), ref.color, ref.dash)
		legend = append(legend, legendItem{ref.label, ref.color, ref.dash})
	}
	for _, r := range results {
		if len(r.series) == 0 {
			continue
		}
		color := policyColors[r.policy]
		// One point per pixel column, the highest RSS in it, so that a
		// long run's chart stays small and keeps its peaks.
		var pts []string
		col, peak := -1, 0.0
		for _, s := range r.series {
			px, v := x(s.t.Seconds()), float64(s.rss)/mib
			if c := int(px); c != col {
				if col >= 0 {
					pts = append(pts, fmt.Sprintf("%d,%.1f", col, y(peak)))
				}
				col, peak = c, v
			}
			peak = math.Max(peak, v)
		}
		if col >= 0 {
			pts = append(pts, fmt.Sprintf("%d,%.1f", col, y(peak)))
		}
		f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"><title>%s: max RSS %.1f MiB</title></polyline>`+"\n",
			strings.Join(pts, " "), color, r.policy, float64(r.maxRSS)/mib)
		legend = append(legend, legendItem{r.policy, color, ""})
	}
	// The legend, in rows under the title.
	lx, ly := float64(marginL), 58.0
	for _, it := range legend {
		w := 24 + 7.2*float64(len([]rune(it.name))) + 24
		if lx+w > chartW-marginR {
			lx, ly = marginL, ly+18
		}
		dash := ""
		if it.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, it.dash)
		}
		f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`+"\n", lx, lx+18, ly, ly, it.color, dash)
		f(`<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+24, ly+4, html.EscapeString(it.name))
		lx += w
	}
	f("</svg>\n")
	return b.String()
}
