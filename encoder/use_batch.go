package encoder

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// The queries of concurrent EmbedQueries calls are encoded together: a
// call that finds another one encoding waits, and the calls that waited
// are then encoded in one forward pass by one of them. Each matrix of
// weights (about 8 MB a pass in all, more than a core's cache) is then
// read once for the batch instead of once a query, which is what a query
// costs on a busy server: two cores encoding two queries each read all of
// them. A text's vector does not depend on the others of its pass (every
// row of a product, attention and pooling are a text's own), so the
// vectors are a call alone's, to the bit (TestUSEConcurrentQueriesAgree).
//
// A call alone is encoded at once; a call that waits does so for at most
// the pass in progress and its own (a few milliseconds: it does not watch
// its ctx meanwhile).
type queryBatches struct {
	mu      sync.Mutex
	busy    bool         // a pass is running or about to
	pending []*queryCall // waiting for the next pass
	passes  atomic.Int64 // passes run (for the tests)
}

// queryCall is one EmbedQueries call.
type queryCall struct {
	texts []string
	vecs  [][]float32
	err   error
	done  chan struct{} // closed when vecs or err is set
	lead  chan struct{} // closed when this call is to run the next pass
}

// embedQueries encodes texts (quant: the int16 path) in a pass with the
// texts of the calls waiting, as described above.
func (u *USE) embedQueries(ctx context.Context, texts []string, quant bool) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &queryCall{texts: texts, done: make(chan struct{}), lead: make(chan struct{})}
	b := &u.batches
	b.mu.Lock()
	if b.busy {
		b.pending = append(b.pending, c)
		b.mu.Unlock()
		select {
		case <-c.done: // encoded in another call's pass
			return c.vecs, c.err
		case <-c.lead: // to run the next pass, busy still set
		}
		b.mu.Lock()
	}
	calls := append([]*queryCall{c}, b.pending...)
	b.pending = nil
	b.busy = true
	b.mu.Unlock()
	// The calls that come meanwhile: the first runs their pass (deferred,
	// so that a panic of this pass does not leave them waiting).
	defer func() {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		next := b.pending[0]
		b.pending = b.pending[1:]
		b.mu.Unlock()
		close(next.lead)
	}()
	// The pass serves other calls too: this one's cancellation does not
	// end it (it is checked above, and a pass takes milliseconds).
	u.pass(context.WithoutCancel(ctx), calls, quant)
	return c.vecs, c.err
}

// errPassPanicked is what the other calls of a pass get when it panics
// (the call that ran it panics).
var errPassPanicked = errors.New("encoder: the forward pass of these queries panicked")

// pass encodes the texts of calls in one embed call and gives each call
// its vectors.
func (u *USE) pass(ctx context.Context, calls []*queryCall, quant bool) {
	u.batches.passes.Add(1)
	delivered := 0 // calls given their vectors
	defer func() {
		if r := recover(); r != nil {
			for _, c := range calls[delivered:] { // calls[0] ran the pass: it panics
				c.err = errPassPanicked
				close(c.done)
			}
			panic(r)
		}
	}()
	var texts []string
	for _, c := range calls {
		texts = append(texts, c.texts...)
	}
	vecs, err := u.embed(ctx, texts, quant)
	for _, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.vecs, vecs = vecs[:len(c.texts):len(c.texts)], vecs[len(c.texts):]
		}
		close(c.done)
		delivered++
	}
}
