package tool

// Role is who wrote a Message.
type Role string

// The roles of a conversation (those of the Chat Completions API).
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation, as plain data: an agent's
// transcript, what a model is sent and answers, and what an application
// that runs its own loop hands toolsift (its framework's messages
// converted to it). The conversation → query rule (think.ConversationQuery)
// reads its roles, text and tool calls.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Found, on a tool message that answers a search (search_tools, or an
	// API's own tool search: a ToolCall with Search set), names the tools
	// the search found, best first. A model whose API loads tools on
	// demand renders it natively for the tools it was sent deferred
	// (Responses: a tool_search_output with their definitions; Anthropic:
	// tool_reference blocks) and skips the others; a model without
	// deferred tools (Chat Completions) ignores it: Content lists them.
	Found []string `json:"found,omitempty"`
	// Hosted, on an assistant message, are the calls the provider made
	// itself before it (hosted MCP), in order.
	Hosted []HostedCall `json:"hosted,omitempty"`
}

// ToolCall is one tool call an assistant Message asks for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are the raw arguments as the model wrote them. They are not
	// guaranteed to be JSON: a caller validates them before calling a tool
	// (ObjectArgs).
	Arguments string `json:"arguments"`
	// Search is set when the call is an API's own tool search, executed
	// by the client (a Responses tool_search_call; Anthropic's custom tool
	// search) rather than a function call. Its Name is then search_tools
	// (think.SearchToolName), answered as that tool is, and a model renders
	// it, and its answer, in its API's form again when the conversation is
	// sent back.
	Search bool `json:"search,omitempty"`
}

// HostedCall is a tool call the provider made itself, on an MCP server it
// reaches (a Responses mcp_call): it is part of the assistant message
// that reports it, and a model sends it back as such with the
// conversation. No one runs it here.
type HostedCall struct {
	ID string `json:"id"`
	// Server is the server's label at the provider; Name the tool's name
	// on the server; Tool its name in the catalog, when the model knows it.
	Server    string `json:"server"`
	Name      string `json:"name"`
	Tool      string `json:"tool,omitempty"`
	Arguments string `json:"arguments"`
	Output    string `json:"output,omitempty"`
	Error     string `json:"error,omitempty"`
}
