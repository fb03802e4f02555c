package benchmarks_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/toolsift/toolsift/tool"
)

// Vocabulary for synthetic tools that read like the ones real MCP servers
// list: a server, a verb, an object, a qualifier, and typed parameters with
// descriptions.
var (
	synthServers = []string{"github", "gitlab", "jira", "linear", "slack", "notion", "stripe", "hubspot", "salesforce",
		"asana", "trello", "zendesk", "shopify", "twilio", "sendgrid", "datadog", "sentry", "pagerduty", "aws", "azure",
		"gcp", "kubernetes", "docker", "postgres", "mongodb", "redis", "elastic", "snowflake", "airtable", "figma",
		"dropbox", "box", "gdrive", "gmail", "outlook", "calendar", "zoom", "teams", "discord", "spotify"}
	synthVerbs = []string{"get", "list", "create", "update", "delete", "search", "find", "send", "archive", "restore",
		"assign", "close", "reopen", "export", "import", "sync", "approve", "reject", "merge", "schedule", "cancel",
		"upload", "download", "share", "invite", "remove", "rename", "move", "copy", "tag"}
	synthObjects = []string{"issue", "pull request", "repository", "branch", "commit", "comment", "user", "team",
		"project", "task", "ticket", "invoice", "customer", "payment", "subscription", "refund", "message", "channel",
		"thread", "file", "folder", "document", "page", "database", "table", "record", "event", "meeting", "webhook",
		"deployment", "pod", "service", "alert", "incident", "dashboard", "metric", "log", "release", "label", "milestone"}
	synthQualifiers = []string{"", "by id", "for the current user", "in a workspace", "with filters and pagination",
		"across all projects", "for a date range", "in bulk", "by name", "from a template"}
	synthParams = []struct{ name, typ, desc string }{
		{"id", "string", "The unique identifier of the %s."},
		{"name", "string", "The name of the %s."},
		{"query", "string", "Free-text search query over %ss."},
		{"limit", "integer", "Maximum number of %ss to return (1-100)."},
		{"cursor", "string", "Pagination cursor from the previous page of %ss."},
		{"status", "string", "Filter %ss by status."},
		{"owner", "string", "User who owns the %s."},
		{"created_after", "string", "Only %ss created after this ISO 8601 date."},
		{"labels", "array", "Labels to attach to the %s."},
		{"description", "string", "A longer description of the %s, in Markdown."},
		{"workspace_id", "string", "Workspace that contains the %s."},
		{"notify", "boolean", "Whether to notify watchers of the %s."},
	}
)

// synthTools returns n distinct, seeded synthetic tools.
func synthTools(n int, seed uint64) []tool.Tool {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tools := make([]tool.Tool, 0, n)
	seen := make(map[string]bool, n)
	for i := 0; len(tools) < n; i++ {
		server := synthServers[r.IntN(len(synthServers))]
		verb := synthVerbs[r.IntN(len(synthVerbs))]
		obj := synthObjects[r.IntN(len(synthObjects))]
		qual := synthQualifiers[r.IntN(len(synthQualifiers))]
		name := fmt.Sprintf("%s__%s_%s", server, verb, strings.ReplaceAll(obj, " ", "_"))
		if seen[name] {
			name = fmt.Sprintf("%s_v%d", name, i)
		}
		seen[name] = true
		desc := fmt.Sprintf("%s a %s %s in %s.", strings.ToUpper(verb[:1])+verb[1:], obj, qual, server)
		if r.IntN(2) == 0 {
			desc += fmt.Sprintf(" Returns the %s with its fields, or an error if the caller lacks access.", obj)
		}
		props := map[string]any{}
		var required []string
		for _, j := range r.Perm(len(synthParams))[:2+r.IntN(5)] {
			p := synthParams[j]
			s := map[string]any{"type": p.typ, "description": fmt.Sprintf(p.desc, obj)}
			if p.typ == "array" {
				s["items"] = map[string]any{"type": "string"}
			}
			props[p.name] = s
			if r.IntN(3) == 0 {
				required = append(required, p.name)
			}
		}
		schema := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			schema["required"] = required
		}
		raw, _ := json.Marshal(schema)
		t := tool.Tool{Name: name, Server: server, OriginalName: strings.TrimPrefix(name, server+"__"), Description: desc, InputSchema: raw}
		tools = append(tools, t.WithHash())
	}
	return tools
}

// synthQueries returns seeded task texts in the same vocabulary.
func synthQueries(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, seed+1))
	qs := make([]string, n)
	for i := range qs {
		qs[i] = fmt.Sprintf("please %s the %s named release-%d in %s and tell me when done",
			synthVerbs[r.IntN(len(synthVerbs))], synthObjects[r.IntN(len(synthObjects))], r.IntN(100), synthServers[r.IntN(len(synthServers))])
	}
	return qs
}
