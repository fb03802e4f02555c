package main

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// plotData is what eval --plot draws: on the left, recall@k per mode; on
// the right, the prompt tokens of tool definitions per mode, both what one
// step sends within the budget (with the gold it keeps) and what the top k
// would cost at full size.
type plotData struct {
	Title    string // the dataset's name
	Subtitle string
	Ks       []int
	Modes    []plotMode
	Budget   int
	// Tools and AllTokens are the catalog and what sending all of it costs.
	Tools, AllTokens int
}

// plotMode is one ranking mode's figures.
type plotMode struct {
	Name   string
	Recall []float64 // one per k, in [0, 1]
	// StepTokens, StepTools, GoldKept and GoldListed describe what one
	// step sends within the budget: mean tokens, mean tools, the gold
	// recall of the tools sent with their schemas, and of the gold sent
	// only listed (think.Options.Listing).
	StepTokens, StepTools, GoldKept, GoldListed float64
	// TopTokens is the mean full-size cost of the top Ks[len(Ks)-1] tools.
	TopTokens float64
}

var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// halo keeps a label readable over the lines it crosses.
const halo = `stroke="white" stroke-width="3" stroke-linejoin="round" paint-order="stroke"`

// plotTitle names the dataset for a person, not by its path: the folder
// of the tools file (a dataset is a folder: ../shared/datasets/bfcl gives
// "bfcl"), the config file's base name, or the embedded dataset's name.
func plotTitle(o evalOptions) string {
	switch {
	case o.configPath != "":
		return filepath.Base(o.configPath)
	case o.toolsPath != "":
		abs, err := filepath.Abs(o.toolsPath)
		if err != nil {
			abs = o.toolsPath
		}
		return filepath.Base(filepath.Dir(abs))
	}
	return "BFCL v4"
}

// writeSVG renders d as a self-contained SVG chart.
func writeSVG(w io.Writer, d plotData) error {
	n := len(d.Ks)
	if n == 0 || len(d.Modes) == 0 {
		return fmt.Errorf("plot: no k values or no modes")
	}
	const (
		width, height = 1080.0, 500.0
		top, bottom   = 96.0, 430.0 // plot areas
		// Left panel: recall@k, with room on its right for the lines' labels.
		rl, rr = 64.0, 380.0
		// Right panel: tokens per mode, bars from tl to tr.
		tl, tr = 590.0, 780.0
	)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	text(&b, rl-40, 30, `font-size="18" font-weight="bold"`, d.Title+": retrieval and tool tokens per step")
	text(&b, rl-40, 52, `fill="#555"`, d.Subtitle)

	// Left: recall@k.
	slot := (rr - rl) / float64(n)
	x := func(i int) float64 { return rl + slot*(float64(i)+0.5) }
	y := func(v float64) float64 { return top + (bottom-top)*(1-v) }
	text(&b, rl, top-26, `font-weight="bold"`, "recall@k")
	for _, f := range []float64{0, 0.2, 0.4, 0.6, 0.8, 1} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", rl, y(f), rr, y(f))
		text(&b, rl-6, y(f)+4, `text-anchor="end" fill="#555"`, fmt.Sprintf("%.1f", f))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", rl, bottom, rr, bottom)
	for i, k := range d.Ks {
		text(&b, x(i), bottom+18, `text-anchor="middle"`, fmt.Sprint(k))
	}
	text(&b, (rl+rr)/2, bottom+38, `text-anchor="middle" fill="#555"`, "k (top tools retrieved)")
	for mi, m := range d.Modes {
		if len(m.Recall) != n {
			return fmt.Errorf("plot: mode %s has %d recall values for %d k values", m.Name, len(m.Recall), n)
		}
		color := plotColors[mi%len(plotColors)]
		var pts []string
		for i, v := range m.Recall {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		for i, v := range m.Recall {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s recall@%d = %.3f</title></circle>`+"\n",
				x(i), y(v), color, html.EscapeString(m.Name), d.Ks[i], v)
		}
	}
	// Every point's value, each mode's in its colour, stacked under the
	// points of its k so that close values stay readable; the lines' own
	// labels (mode and last value) at their right end.
	for i := range d.Ks {
		labels := make([]plotLabel, 0, len(d.Modes))
		lowest := 0.0 // the lowest point of this k, in SVG's downward y
		for mi, m := range d.Modes {
			labels = append(labels, plotLabel{y: y(m.Recall[i]), v: m.Recall[i], text: fmt.Sprintf("%.2f", m.Recall[i]), color: plotColors[mi%len(plotColors)]})
			lowest = math.Max(lowest, y(m.Recall[i]))
		}
		if i == n-1 {
			for j := range labels {
				labels[j].text = d.Modes[j].Name + " " + labels[j].text
				labels[j].y += 4
			}
			spread(labels, 14, top, bottom)
			for _, l := range labels {
				text(&b, x(i)+9, l.y, fmt.Sprintf(`fill="%s" font-weight="bold" %s`, l.color, halo), l.text)
			}
			continue
		}
		for j := range labels {
			labels[j].y = lowest + 16 // under every point of this k, in the modes' order by value
		}
		slices.SortStableFunc(labels, func(a, b plotLabel) int { return cmp.Compare(b.v, a.v) })
		spread(labels, 11, top, bottom)
		for _, l := range labels {
			text(&b, x(i), l.y, fmt.Sprintf(`text-anchor="middle" font-size="10" fill="%s" %s`, l.color, halo), l.text)
		}
	}

	// Right: tokens per mode, sent within the budget and of the top k.
	maxTok := float64(d.Budget)
	for _, m := range d.Modes {
		maxTok = math.Max(maxTok, math.Max(m.StepTokens, m.TopTokens))
	}
	tokTop := niceCeil(maxTok)
	tx := func(v float64) float64 { return tl + (tr-tl)*v/tokTop }
	text(&b, tl-80, top-26, `font-weight="bold"`, "tool tokens per step (mean)")
	for _, f := range []float64{0, 0.2, 0.4, 0.6, 0.8, 1} {
		v := tokTop * f
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", tx(v), top, tx(v), bottom-34)
		text(&b, tx(v), bottom-20, `text-anchor="middle" fill="#555"`, shortNum(v))
	}
	if d.Budget > 0 {
		bx := tx(float64(d.Budget))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-dasharray="5,4"/>`+"\n", bx, top-4, bx, bottom-34)
		text(&b, bx, top-6, `text-anchor="middle" font-size="11"`, "budget "+thousands(float64(d.Budget)))
	}
	// Labels start right of the budget line, which would cross them.
	labelX := func(v float64) float64 { return math.Max(tx(v), tx(float64(d.Budget))) + 6 }
	kTop := d.Ks[n-1]
	rowH := math.Min(90, (bottom-top-60)/float64(len(d.Modes)))
	for mi, m := range d.Modes {
		color := plotColors[mi%len(plotColors)]
		y0 := top + 10 + rowH*float64(mi)
		text(&b, tl-10, y0+13, fmt.Sprintf(`text-anchor="end" font-weight="bold" fill="%s"`, color), m.Name)
		kept := fmt.Sprintf("gold kept %.3f", m.GoldKept)
		if m.GoldListed > 0 {
			kept = fmt.Sprintf("gold kept %.3f with schema + %.3f listed", m.GoldKept, m.GoldListed)
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="18" fill="%s"><title>%s: %.0f tokens, %.1f tools per step within the budget; %s</title></rect>`+"\n",
			tl, y0, tx(m.StepTokens)-tl, color, html.EscapeString(m.Name), m.StepTokens, m.StepTools, kept)
		text(&b, labelX(m.StepTokens), y0+13, "", fmt.Sprintf("%s sent · %.1f tools · %s", thousands(m.StepTokens), m.StepTools, kept))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="12" fill="%s" fill-opacity="0.35"><title>%s: top %d tools at full size, %.0f tokens</title></rect>`+"\n",
			tl, y0+22, tx(m.TopTokens)-tl, color, html.EscapeString(m.Name), kTop, m.TopTokens)
		text(&b, labelX(m.TopTokens), y0+32, `font-size="11" fill="#555"`, fmt.Sprintf("%s for the top %d at full size", thousands(m.TopTokens), kTop))
	}
	note := fmt.Sprintf("Sending all %s tools would cost %s tokens per step.", thousands(float64(d.Tools)), thousands(float64(d.AllTokens)))
	text(&b, tl-80, bottom+18, `fill="#555"`, note)
	text(&b, tl-80, bottom+38, `fill="#555"`, `Solid: what a step sends within the budget; "gold kept": recall of the tools sent with their schemas.`)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// plotLabel is a text placed by spread.
type plotLabel struct {
	y, v  float64 // position, value
	text  string
	color string
}

// spread moves labels apart so that baselines are at least gap apart,
// keeping their order by y and staying within [lo, hi] where it can.
func spread(labels []plotLabel, gap, lo, hi float64) {
	slices.SortStableFunc(labels, func(a, b plotLabel) int { return cmp.Compare(a.y, b.y) })
	for i := 1; i < len(labels); i++ {
		labels[i].y = math.Max(labels[i].y, labels[i-1].y+gap)
	}
	if n := len(labels); n > 0 && labels[n-1].y > hi {
		labels[n-1].y = hi
		for i := n - 2; i >= 0; i-- {
			labels[i].y = math.Min(labels[i].y, labels[i+1].y-gap)
		}
	}
	for i := range labels {
		labels[i].y = math.Max(labels[i].y, lo)
	}
}

func text(b *strings.Builder, x, y float64, attrs, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" %s>%s</text>`+"\n", x, y, attrs, html.EscapeString(s))
}

// thousands formats v rounded, with commas: 374114 gives "374,114".
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", math.Round(v))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
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
		return strconv.FormatFloat(math.Round(v/1e5)/10, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(math.Round(v/1e2)/10, 'f', -1, 64) + "k"
	default:
		return fmt.Sprintf("%.0f", v)
	}
}
