package audit

import (
	"context"

	"github.com/toolsift/toolsift/store"
)

// Write writes rec to s as a call's record is written.
func Write(ctx context.Context, s store.Store, rec Record) error {
	return (&Log{Store: s}).write(ctx, rec)
}

// SetMaxQueued sets how many records l keeps in memory (maxQueued).
func (l *Log) SetMaxQueued(n int) { l.max = n }
