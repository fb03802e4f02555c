package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// svgTexts returns the text of every <text> element of an SVG file.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	in := false
	dec := xml.NewDecoder(f)
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return texts
			}
			t.Fatalf("plot is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			in = tok.Name.Local == "text"
			if in {
				texts = append(texts, "")
			}
		case xml.CharData:
			if in {
				texts[len(texts)-1] += string(tok)
			}
		case xml.EndElement:
			in = false
		}
	}
}

// TestPlot: the plot is titled by the dataset's name, not its path, and
// labels every mode's tokens (sent within the budget, with the gold kept,
// and of the top k) and recall with their values, as the report has them.
func TestPlot(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "plot.svg")
	code, stdout, stderr := runToolbench(t, "eval", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl",
		"--k", "1,3", "--mode", "hybrid,lexical", "--budget", "150", "--json", "--plot", plot)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, plot)
	want := []string{
		"testdata: retrieval and tool tokens per step",
		"budget 150",
		fmt.Sprintf("Sending all 6 tools would cost %s tokens per step.", thousands(float64(rep.AllToolsTokens))),
	}
	for _, r := range rep.Runs {
		want = append(want, r.Mode,
			fmt.Sprintf("%s sent · %.1f tools · gold kept %.3f", thousands(r.Select.MeanTokens), r.Select.MeanTools, r.Select.RecallSchema),
			fmt.Sprintf("%s for the top 3 at full size", thousands(r.AtK[1].Tokens)),
			fmt.Sprintf("%.2f", r.AtK[0].Recall),            // recall@1, under its point
			fmt.Sprintf("%s %.2f", r.Mode, r.AtK[1].Recall), // the line's end
		)
	}
	for _, w := range want {
		if !slices.Contains(texts, w) {
			t.Errorf("plot lacks the text %q; it has:\n%s", w, strings.Join(texts, "\n"))
		}
	}
	for _, s := range texts {
		if strings.Contains(s, "testdata/tools.jsonl") {
			t.Errorf("plot names the dataset by its path: %q", s)
		}
	}
}

func TestPlotTitle(t *testing.T) {
	for _, tt := range []struct {
		o    evalOptions
		want string
	}{
		{evalOptions{toolsPath: "../shared/datasets/bfcl/tools.jsonl"}, "bfcl"},
		{evalOptions{toolsPath: "/data/shared/mcp/catalog.jsonl"}, "mcp"},
		{evalOptions{configPath: "/home/me/.config/servers.json"}, "servers.json"},
		{evalOptions{}, "BFCL v4"},
	} {
		if got := plotTitle(tt.o); got != tt.want {
			t.Errorf("plotTitle(%+v) = %q, want %q", tt.o, got, tt.want)
		}
	}
}

// TestSpread: labels end at least a gap apart, in their order, within
// bounds when there is room.
func TestSpread(t *testing.T) {
	labels := []plotLabel{{y: 100, text: "a"}, {y: 101, text: "b"}, {y: 95, text: "c"}, {y: 300, text: "d"}, {y: 299, text: "e"}}
	spread(labels, 12, 0, 305)
	var got []string
	for i, l := range labels {
		got = append(got, fmt.Sprintf("%s@%.0f", l.text, l.y))
		if i > 0 && l.y-labels[i-1].y < 12 {
			t.Errorf("labels %d and %d are %.0f apart", i-1, i, l.y-labels[i-1].y)
		}
	}
	if want := "c@95 a@107 b@119 e@293 d@305"; strings.Join(got, " ") != want {
		t.Errorf("spread: %s, want %s", strings.Join(got, " "), want)
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999.6: "1,000", 1214691: "1,214,691", -4000: "-4,000", 374114.4: "374,114"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}
