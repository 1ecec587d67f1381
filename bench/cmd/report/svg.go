package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Plain SVG text, no dependencies: a grouped bar chart with min-max
// whiskers, and a line chart over a log-scaled x axis.

const (
	chartW   = 820
	chartH   = 440
	marginL  = 84
	marginR  = 24
	marginT  = 76
	marginB  = 70
	fontFace = `font-family="Helvetica, Arial, sans-serif"`
)

type svgDoc struct{ b strings.Builder }

func (d *svgDoc) f(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

func newSVG(title, subtitle string) *svgDoc {
	d := &svgDoc{}
	d.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="12">`+"\n",
		chartW, chartH, chartW, chartH, fontFace)
	d.f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	d.f(`<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", marginL, esc(title))
	if subtitle != "" {
		d.f(`<text x="%d" y="40" fill="#555">%s</text>`+"\n", marginL, esc(subtitle))
	}
	return d
}

func (d *svgDoc) end() string {
	d.f("</svg>\n")
	return d.b.String()
}

func esc(s string) string { return html.EscapeString(s) }

// niceTicks returns tick values 0, step, 2 step, ... covering max.
func niceTicks(max float64) []float64 {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		max = 1
	}
	raw := max / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := 0.0; v < max+step*0.999; v += step {
		ticks = append(ticks, v)
	}
	return ticks
}

// short formats an axis value: 1.2M, 350k, 64, 0.85.
func short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trimZero(fmt.Sprintf("%.2f", v/1e6)) + "M"
	case a >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a >= 10:
		return trimZero(fmt.Sprintf("%.1f", v))
	default:
		return trimZero(fmt.Sprintf("%.2f", v))
	}
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// yAxis draws horizontal grid lines and labels; it returns the y mapping.
func (d *svgDoc) yAxis(max float64, label string) func(float64) float64 {
	ticks := niceTicks(max)
	top := ticks[len(ticks)-1]
	plotH := float64(chartH - marginT - marginB)
	y := func(v float64) float64 { return float64(chartH-marginB) - v/top*plotH }
	for _, t := range ticks {
		d.f(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, chartW-marginR, y(t), y(t))
		d.f(`<text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", marginL-6, y(t)+4, short(t))
	}
	d.f(`<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", marginL, marginL, marginT, chartH-marginB)
	d.f(`<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", marginL, chartW-marginR, chartH-marginB, chartH-marginB)
	mid := float64(marginT+chartH-marginB) / 2
	d.f(`<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle" fill="#333">%s</text>`+"\n", mid, esc(label))
	return y
}

// legend draws the series names in one row under the title.
func (d *svgDoc) legend(names, colors []string, dashed []bool) {
	x := float64(marginL)
	for i, n := range names {
		dash := ""
		if dashed != nil && dashed[i] {
			dash = ` stroke-dasharray="5 3"`
		}
		d.f(`<line x1="%.1f" x2="%.1f" y1="58" y2="58" stroke="%s" stroke-width="8"%s/>`+"\n", x, x+18, colors[i], dash)
		d.f(`<text x="%.1f" y="62">%s</text>`+"\n", x+24, esc(n))
		x += 24 + 7*float64(len(n)) + 22
	}
}

type barSeries struct {
	name   string
	color  string
	values []spread // one per category; n == 0 means no bar
}

// refLine is a dashed horizontal line across a bar chart (a target).
type refLine struct {
	value float64
	color string
	label string
}

// barChart draws one group of bars per category, one bar per series, with
// the median as the bar, a min-max whisker and the value on top, and any
// reference lines.
func barChart(title, subtitle, yLabel string, categories []string, series []barSeries, refs ...refLine) string {
	d := newSVG(title, subtitle)
	max := 0.0
	for _, s := range series {
		for _, v := range s.values {
			max = math.Max(max, v.max)
		}
	}
	for _, r := range refs {
		max = math.Max(max, r.value)
	}
	y := d.yAxis(max, yLabel)
	plotW := float64(chartW - marginL - marginR)
	groupW := plotW / float64(len(categories))
	barW := groupW * 0.8 / float64(len(series))
	for ci, cat := range categories {
		gx := float64(marginL) + groupW*float64(ci) + groupW*0.1
		for si, s := range series {
			v := s.values[ci]
			if v.n == 0 {
				continue
			}
			x := gx + barW*float64(si)
			d.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: median %s (min %s, max %s)</title></rect>`+"\n",
				x+1, y(v.med), barW-2, y(0)-y(v.med), s.color, esc(cat), esc(s.name), short(v.med), short(v.min), short(v.max))
			cx := x + barW/2
			if v.max > v.min {
				d.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222"/>`+"\n", cx, cx, y(v.min), y(v.max))
				d.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222"/>`+"\n", cx-4, cx+4, y(v.max), y(v.max))
				d.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222"/>`+"\n", cx-4, cx+4, y(v.min), y(v.min))
			}
			d.f(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", cx, y(v.max)-4, short(v.med))
		}
		for li, l := range strings.Split(cat, "\n") {
			d.f(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx+groupW*0.4, chartH-marginB+18+14*li, esc(l))
		}
	}
	// Reference lines go over the bars; the legend names them.
	var names, colors []string
	var dashed []bool
	for _, s := range series {
		names, colors, dashed = append(names, s.name), append(colors, s.color), append(dashed, false)
	}
	for _, r := range refs {
		d.f(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n",
			marginL, chartW-marginR, y(r.value), y(r.value), r.color)
		names, colors, dashed = append(names, r.label), append(colors, r.color), append(dashed, true)
	}
	d.legend(names, colors, dashed)
	return d.end()
}

type point struct {
	x float64
	y spread
}

type lineSeries struct {
	name   string
	color  string
	dashed bool
	points []point
}

// lineChart draws series over a log10 x axis with a tick at every x in xs.
func lineChart(title, subtitle, xLabel, yLabel string, xs []float64, xName func(float64) string, series []lineSeries) string {
	d := newSVG(title, subtitle)
	max := 0.0
	for _, s := range series {
		for _, p := range s.points {
			max = math.Max(max, p.y.max)
		}
	}
	y := d.yAxis(max, yLabel)
	lo, hi := math.Log10(xs[0]), math.Log10(xs[len(xs)-1])
	if hi == lo {
		lo, hi = lo-1, hi+1
	}
	plotL, plotR := float64(marginL+30), float64(chartW-marginR-30)
	x := func(v float64) float64 { return plotL + (math.Log10(v)-lo)/(hi-lo)*(plotR-plotL) }
	for _, v := range xs {
		d.f(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#333"/>`+"\n", x(v), x(v), chartH-marginB, chartH-marginB+5)
		d.f(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), chartH-marginB+20, esc(xName(v)))
	}
	d.f(`<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", (plotL+plotR)/2, chartH-marginB+44, esc(xLabel))
	names := make([]string, len(series))
	colors := make([]string, len(series))
	dashed := make([]bool, len(series))
	for i, s := range series {
		names[i], colors[i], dashed[i] = s.name, s.color, s.dashed
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var path []string
		for _, p := range s.points {
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(p.x), y(p.y.med)))
		}
		if len(path) > 1 {
			d.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"%s/>`+"\n", strings.Join(path, " "), s.color, dash)
		}
		for _, p := range s.points {
			px := x(p.x)
			if p.y.max > p.y.min {
				d.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`+"\n", px, px, y(p.y.min), y(p.y.max), s.color)
			}
			d.f(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s at %s: %s</title></circle>`+"\n",
				px, y(p.y.med), s.color, esc(s.name), esc(xName(p.x)), short(p.y.med))
			// Only solid series carry value labels, above their points, so
			// labels do not pile up; every point has a tooltip, and the
			// values are in the tables next to the chart.
			if !s.dashed {
				d.f(`<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle" fill="%s">%s</text>`+"\n",
					px, y(p.y.max)-7, s.color, short(p.y.med))
			}
		}
	}
	d.legend(names, colors, dashed)
	return d.end()
}
