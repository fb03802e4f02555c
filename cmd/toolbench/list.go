package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

func init() {
	register(command{name: "list", summary: "list the tools of a config file's MCP servers (from the cache; --connect starts them)", run: runList})
}

// listedTool is one line of `list --json`: a tools.jsonl record
// (internal/dataset), so that the output is a dataset as it is
// (list --json > tools.jsonl; eval --tools tools.jsonl) rather than one
// more format to convert. Name is the qualified name the Hub sends, which
// eval --config and its gold use; OriginalName is the server's own.
type listedTool struct {
	Name         string            `json:"name"`
	Server       string            `json:"server"`
	OriginalName string            `json:"original_name"`
	Title        string            `json:"title,omitempty"`
	Description  string            `json:"description"`
	InputSchema  json.RawMessage   `json:"inputSchema"`
	Annotations  *tool.Annotations `json:"annotations,omitempty"`
}

func runList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "list", `--config mcp.json [--connect] [--json] [--input ID=VALUE] [--quiet] [--timeout 30s] [--protocol-version V]

Servers whose tool list is in the cache are not started: their tools are the
cache's, and the report says how old it is. --connect starts every server.`)
	config := fs.String("config", "", "mcpServers config `file` (required)")
	asJSON := fs.Bool("json", false, "print the tools on stdout as tools.jsonl, named as the hub sends them, for eval --tools and tokens --tools (server statuses go to stderr)")
	timeout := fs.Duration("timeout", 30*time.Second, "per-server connect `timeout`, for servers whose config sets none")
	version := fs.String("protocol-version", "", "MCP revision to request from servers whose config sets none (default "+upstream.DefaultProtocolVersion+`; "latest" probes with server/discover)`)
	cache := cacheFlags(fs)
	connect := connectFlag(fs)
	quiet := quietFlag(fs)
	inputs := inputFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *config == "":
		return usageError(fs, "--config is required")
	case fs.NArg() > 0:
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	case *timeout <= 0:
		return usageError(fs, "--timeout %v: want a positive duration", *timeout)
	}
	// Servers with a cache entry are served from it, unless --connect:
	// then every one is started (and its fresh list cached).
	c := connection{hub: upstream.HubOptions{Timeout: *timeout, ProtocolVersion: *version, MaxRestarts: -1, Start: startMode(*connect)}, inputs: inputs}
	var o toolsift.Options
	if err := cache(ctx, &o); err != nil {
		return err
	}
	e.statusReport = true // the report has each server's warnings
	ts, _, elapsed, err := openToolset(ctx, e, *config, c, o, *quiet)
	if err != nil {
		return err
	}
	statuses := ts.Status()
	tools := ts.Tools()
	if err := ts.Close(); err != nil {
		return err
	}

	report := e.stdout
	if *asJSON {
		report = e.stderr
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		for _, t := range tools {
			rec := listedTool{Name: t.Name, Server: t.Server, OriginalName: t.OriginalName, Title: t.Title,
				Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations}
			if err := enc.Encode(rec); err != nil {
				return err
			}
		}
	}
	writeStatuses(report, statuses, elapsed)
	if note := cacheNote(statuses, time.Now()); note != "" {
		fmt.Fprintln(report, note)
	}
	// Scripts and CI can tell: any server that did not connect fails list.
	var failed []string
	for _, st := range statuses {
		if st.State != upstream.StateReady && st.State != upstream.StateDisabled && st.State != upstream.StateLazy {
			failed = append(failed, st.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s failed: %s", runPlural(len(failed), "server"), nameList(failed, maxNamesShown))
	}
	return nil
}

// writeStatuses prints one line per server, the failures' reasons and
// stderr tails, and a total.
func writeStatuses(w io.Writer, statuses []upstream.ServerStatus, elapsed time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tTOOLS\tTIME\tPROTOCOL\tSERVER INFO")
	ok, cached, failed, disabled, total := 0, 0, 0, 0, 0
	for _, st := range statuses {
		status := "ok"
		switch st.State {
		case upstream.StateReady:
			ok++
			total += st.Tools
		case upstream.StateLazy:
			cached++
			total += st.Tools
			status = "cached"
		case upstream.StateDisabled:
			disabled++
			status = "disabled"
		default:
			failed++
			status = "FAILED"
		}
		info := termsafe.String(strings.TrimSpace(st.ServerName + " " + st.ServerVersion))
		tools := fmt.Sprint(st.Tools)
		if st.Disabled > 0 {
			tools += fmt.Sprintf(" (+%d filtered)", st.Disabled)
		}
		took := st.ConnectTime.Round(time.Millisecond).String()
		if st.State == upstream.StateLazy {
			took = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", st.Name, status, tools, took, termsafe.String(st.ProtocolVersion), info)
	}
	tw.Flush()
	for _, st := range statuses {
		if st.State == upstream.StateReady || st.State == upstream.StateDisabled || st.State == upstream.StateLazy {
			for _, warn := range st.Warnings {
				fmt.Fprintf(w, "\n%s: warning: %s", st.Name, termsafe.String(warn))
			}
			continue
		}
		fmt.Fprintf(w, "\n%s failed: %s\n", st.Name, termsafe.String(fmt.Sprint(st.Err)))
		if ie, ok := errors.AsType[*config.InputError](st.Err); ok {
			fmt.Fprintf(w, "  give it with --input %s=VALUE\n", ie.ID)
		}
		if st.Stderr != "" {
			fmt.Fprintf(w, "  stderr (tail):\n%s\n", indent(lastLines(termsafe.String(st.Stderr), 10), "    "))
		}
	}
	fmt.Fprintf(w, "\n%d servers: %d ok, ", len(statuses), ok)
	if cached > 0 {
		fmt.Fprintf(w, "%d from cache, ", cached)
	}
	fmt.Fprintf(w, "%d failed", failed)
	if disabled > 0 {
		fmt.Fprintf(w, ", %d disabled", disabled)
	}
	fmt.Fprintf(w, "; %d tools; %.1fs\n", total, elapsed.Seconds())
}

// maxNamesShown is how many names a summary line lists before "and N
// more".
const maxNamesShown = 10

// nameList joins the first max names and says how many more there are.
func nameList(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
