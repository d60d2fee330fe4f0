package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// chart draws the median rollout time against replicas (log scale) for the Rolling cases:
// one pair of lines (DC solid, Deployment dashed) per minReadySeconds.
func chart(res *Results) string {
	const W, H, left, right, top, bottom = 720, 420, 70, 200, 40, 60
	type point struct{ x, y float64 }
	type series struct {
		label  string
		color  string
		dashed bool
		pts    []point
	}
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}
	byMR := map[int32][]CaseResult{}
	var mrs []int32
	for _, c := range res.Cases {
		if c.Strategy != "Rolling" || c.Skipped != "" {
			continue
		}
		if _, ok := byMR[c.MinReadySeconds]; !ok {
			mrs = append(mrs, c.MinReadySeconds)
		}
		byMR[c.MinReadySeconds] = append(byMR[c.MinReadySeconds], c)
	}
	var ss []series
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for i, mr := range mrs {
		cs := byMR[mr]
		sort.Slice(cs, func(a, b int) bool { return cs[a].Replicas < cs[b].Replicas })
		dc := series{label: fmt.Sprintf("DC, minReady %ds", mr), color: colors[i%len(colors)]}
		dep := series{label: fmt.Sprintf("Deployment, minReady %ds", mr), color: colors[i%len(colors)], dashed: true}
		for _, c := range cs {
			x := math.Log10(float64(max(c.Replicas, 1)))
			dc.pts = append(dc.pts, point{x, c.DCMedianMS / 1000})
			dep.pts = append(dep.pts, point{x, c.DeploymentMedianMS / 1000})
			minX, maxX = math.Min(minX, x), math.Max(maxX, x)
			maxY = math.Max(maxY, math.Max(c.DCMedianMS, c.DeploymentMedianMS)/1000)
		}
		ss = append(ss, dc, dep)
	}
	if len(ss) == 0 {
		minX, maxX = 1, 3
	}
	if maxX-minX < 1 {
		minX, maxX = minX-0.5, maxX+0.5
	} else {
		pad := (maxX - minX) * 0.08
		minX, maxX = minX-pad, maxX+pad
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY = niceCeil(maxY * 1.1)
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	sx := func(x float64) float64 { return float64(left) + (x-minX)/(maxX-minX)*pw }
	sy := func(y float64) float64 { return float64(top) + ph - y/maxY*ph }

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="22" font-size="15" font-weight="bold">Rollout time against replicas (Rolling vs RollingUpdate, median)</text>`+"\n", left)
	// Axes and grid.
	for i := 0; i <= 5; i++ {
		y := maxY * float64(i) / 5
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, sy(y), W-right, sy(y))
		p(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, sy(y)+4, trimFloat(y))
	}
	for e := math.Ceil(minX); e <= maxX+1e-9; e++ {
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e0e0e0"/>`+"\n", sx(e), top, sx(e), H-bottom)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>`+"\n", sx(e), H-bottom+18, math.Pow(10, e))
	}
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, H-bottom, W-right, H-bottom)
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, H-bottom)
	p(`<text x="%.1f" y="%d" text-anchor="middle">replicas (log scale)</text>`+"\n", float64(left)+pw/2, H-18)
	p(`<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">seconds from the template change to complete</text>`+"\n", float64(top)+ph/2)
	for i, s := range ss {
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for _, pt := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(pt.x), sy(pt.y)))
		}
		p(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		for _, pt := range s.pts {
			if s.dashed {
				p(`<rect x="%.1f" y="%.1f" width="7" height="7" fill="white" stroke="%s" stroke-width="2"/>`+"\n", sx(pt.x)-3.5, sy(pt.y)-3.5, s.color)
			} else {
				p(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", sx(pt.x), sy(pt.y), s.color)
			}
		}
		ly := top + 10 + i*20
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", W-right+12, ly, W-right+40, ly, s.color, dash)
		p(`<text x="%d" y="%d">%s</text>`+"\n", W-right+46, ly+4, s.label)
	}
	p("</svg>\n")
	return b.String()
}

func niceCeil(v float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= v {
			return m * mag
		}
	}
	return 10 * mag
}
