package provider

// The defaults Resolve applies, for tests that check it does.
const (
	DefaultMaxRetries       = defaultMaxRetries
	DefaultMaxReplyBytes    = defaultMaxReplyBytes
	DefaultReplyTimeout     = defaultReplyTimeout
	DefaultReplyIdleTimeout = defaultReplyIdleTimeout
)
