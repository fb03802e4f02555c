package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// plotData is what eval --plot draws: recall@k for one or more series, and
// the mean prompt tokens of the top-k tools as bars on a second axis.
type plotData struct {
	Title  string
	Ks     []int
	Series []plotSeries
	// Tokens[i] is the mean full-schema tokens of the top Ks[i] tools.
	Tokens []float64
}

type plotSeries struct {
	Name   string
	Recall []float64 // one per k, in [0, 1]
}

var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// writeSVG renders d as a self-contained SVG chart.
func writeSVG(w io.Writer, d plotData) error {
	const (
		width, height            = 760.0, 440.0
		left, right, top, bottom = 70.0, 80.0, 50.0, 60.0
	)
	pw, ph := width-left-right, height-top-bottom
	n := len(d.Ks)
	if n == 0 {
		return fmt.Errorf("plot: no k values")
	}
	slot := pw / float64(n)
	x := func(i int) float64 { return left + slot*(float64(i)+0.5) }
	yRecall := func(v float64) float64 { return top + ph*(1-v) }
	maxTok := 0.0
	for _, t := range d.Tokens {
		maxTok = math.Max(maxTok, t)
	}
	tokTop := niceCeil(maxTok)
	yTok := func(v float64) float64 { return top + ph*(1-v/tokTop) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(d.Title))

	// Token bars behind the lines.
	if len(d.Tokens) == n && tokTop > 0 {
		for i, t := range d.Tokens {
			bw := slot * 0.5
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e0e0e0"><title>%.0f tokens</title></rect>`+"\n",
				x(i)-bw/2, yTok(t), bw, top+ph-yTok(t), t)
		}
		for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
			v := tokTop * f
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#777">%s</text>`+"\n", left+pw+6, yTok(v)+4, shortNum(v))
		}
		fmt.Fprintf(&b, `<text transform="translate(%.1f %.1f) rotate(90)" text-anchor="middle" fill="#777">mean tool tokens of top k (bars)</text>`+"\n", width-18, top+ph/2)
	}

	// Recall grid and axis.
	for _, f := range []float64{0, 0.2, 0.4, 0.6, 0.8, 1} {
		y := yRecall(f)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ccc" stroke-dasharray="3,3"/>`+"\n", left, y, left+pw, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.1f</text>`+"\n", left-6, y+4, f)
	}
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">recall@k</text>`+"\n", top+ph/2)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top+ph, left+pw, top+ph)
	for i, k := range d.Ks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x(i), top+ph+18, k)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">k (tools offered)</text>`+"\n", left+pw/2, height-16)

	for si, s := range d.Series {
		color := plotColors[si%len(plotColors)]
		var pts []string
		for i, v := range s.Recall {
			if i < n {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), yRecall(v)))
			}
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		for i, v := range s.Recall {
			if i < n {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s recall@%d = %.3f</title></circle>`+"\n",
					x(i), yRecall(v), color, html.EscapeString(s.Name), d.Ks[i], v)
				if len(d.Series) == 1 {
					fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">%.2f</text>`+"\n", x(i), yRecall(v)-9, color, v)
				}
			}
		}
		ly := top + 16 + float64(si)*18
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="4" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			left+12, ly-4, color, left+32, ly+1, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func shortNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}
