package encoder

import (
	"math"
	"sync"
)

// useSeg is one text's rows in a batch: rows start..start+n of every
// activation matrix.
type useSeg struct{ start, n int }

// Floats of a forward pass's workspace: per row of the batch (the input,
// layer-normed rows, queries-keys-values, the projected residual, the
// attention's output, the FFN's input and inner rows), and per worker for
// attention (a head's keys and values packed, and its scores).
const (
	useRowFloats  = useEmbedDim + useModelDim + 3*useModelDim + 3*useModelDim + useFFNDim
	useAttnFloats = 3 * useMaxPieces * useMaxPieces
)

// useMaxWork is the workspace of the largest forward pass without its
// int16 part: a batch of useBatchRows rows and a text more, two workers.
const useMaxWork = (useBatchRows+useMaxPieces)*useRowFloats + 2*useAttnFloats

// useWork pools the workspaces of forward passes, so that embedding
// allocates little more than the vectors it returns; useQWork those of the
// int16 path (a matrix product's input rows in int16).
var (
	useWork  = sync.Pool{New: func() any { return new([]float32) }}
	useQWork = sync.Pool{New: func() any { return new([]int16) }}
)

// forward embeds the texts whose piece ids (at most useMaxPieces each) are
// given, all at once: the pieces of all texts are the rows of one matrix,
// so that every matrix product covers the whole batch, and only attention
// and pooling look at where a text starts and ends. It returns one unit
// vector per text. quant runs the matrix products of the weights on the
// int16 path (useMatMulQ).
func (w *useWeights) forward(ids [][]int32, workers int, quant bool) [][]float32 {
	segs := make([]useSeg, len(ids))
	n := 0
	for t, p := range ids {
		segs[t] = useSeg{n, len(p)}
		n += len(p)
	}
	wp := useWork.Get().(*[]float32)
	defer useWork.Put(wp)
	// Attention's jobs are a text's heads: no more workers than those
	// need scratch.
	need := n*useRowFloats + min(workers, len(ids)*useHeads)*useAttnFloats
	if quant {
		need += max(n, len(ids)) // the rows' scales
		need += len(ids) * (useFFNDim + useModelDim)
	}
	if cap(*wp) < need {
		// At least twice the last: passes of queries vary in size, and a
		// workspace made for each larger one is megabytes of garbage.
		*wp = make([]float32, max(need, min(2*cap(*wp), useMaxWork)))
	}
	ws := (*wp)[:need]
	take := func(size int) []float32 {
		b := ws[:size:size]
		ws = ws[size:]
		return b
	}
	x := take(n * useEmbedDim)
	buf := useBuffers{
		a:   take(n * useModelDim),
		qkv: take(n * 3 * useModelDim),
		res: take(n * useModelDim),
		h:   take(n * useModelDim),
		l:   take(n * useModelDim),
		f:   take(n * useFFNDim),
	}
	if quant {
		buf.qs = take(max(n, len(ids)))
		buf.fm = take(len(ids) * useFFNDim)
		buf.hm = take(len(ids) * useModelDim)
		qp := useQWork.Get().(*[]int16)
		defer useQWork.Put(qp)
		if qn := max(n, len(ids)) * useFFNDim; cap(*qp) < qn {
			*qp = make([]int16, max(qn, min(2*cap(*qp), (useBatchRows+useMaxPieces)*useFFNDim)))
		}
		buf.qa = *qp
		buf.quant = true
	}
	buf.attn = ws
	// Input: each piece's embedding twice plus the timing signal of its
	// position — the graph adds the embedding to the embedding-plus-timing
	// (the stack's input and the first layer's AddTimingSignal both keep
	// it), in this order.
	for t, p := range ids {
		for pos, id := range p {
			row := x[(segs[t].start+pos)*useEmbedDim:][:useEmbedDim]
			e := w.emb[int(id)*useEmbedDim:][:useEmbedDim]
			tm := w.timing[pos*useEmbedDim:][:useEmbedDim]
			for i := range row {
				v := f16to32(e[i])
				row[i] = v + (v + tm[i])
			}
		}
	}
	// Mean over each text's pieces (an empty text pools to zeros, as the
	// graph's division by max(count, 1) gives), then the tanh layer and L2
	// normalisation. On the int16 path the last layer pools before its
	// last product, which is linear (see useLayer.apply): one row a text
	// instead of one a piece.
	pooled := make([]float32, len(ids)*useModelDim)
	last := len(w.layers) - 1
	for l := range w.layers {
		if quant && l == last {
			w.layers[l].apply(x, n, segs, w.lnEps, &buf, workers, pooled)
			break
		}
		x = w.layers[l].apply(x, n, segs, w.lnEps, &buf, workers, nil)
		if l == last {
			poolRows(pooled, x, useModelDim, segs)
		}
	}
	h := make([]float32, len(ids)*useOutDim)
	buf.matMul(h, pooled, len(ids), w.tanh, w.tanhB, nil, false, workers)
	out := make([][]float32, len(ids))
	for t := range ids {
		v := h[t*useOutDim:][:useOutDim]
		var ss float32
		for i, e := range v {
			v[i] = float32(math.Tanh(float64(e)))
			ss += v[i] * v[i]
		}
		inv := float32(1 / math.Sqrt(float64(max(ss, w.l2Eps))))
		for i := range v {
			v[i] *= inv
		}
		out[t] = v[:useOutDim:useOutDim]
	}
	return out
}

// useBuffers are the activations of a forward pass, n rows of each, as
// wide as the widest layer needs, and attention's scratch.
type useBuffers struct {
	a, qkv, res, h, l, f []float32
	attn                 []float32 // useAttnFloats per worker
	quant                bool      // the int16 path: qa and qs its workspace
	qa                   []int16
	qs                   []float32
	fm, hm               []float32 // a text's mean of f and of h, when pooling early
}

// poolRows sets dst's row t (width d) to the mean of the rows of x of
// segs[t], zeros for a text without pieces.
func poolRows(dst, x []float32, d int, segs []useSeg) {
	for t, s := range segs {
		p := dst[t*d:][:d]
		clear(p)
		for r := s.start; r < s.start+s.n; r++ {
			row := x[r*d:][:d]
			for i, v := range row {
				p[i] += v
			}
		}
		div := float32(max(s.n, 1))
		for i := range p {
			p[i] /= div
		}
	}
}

// matMul is useMatMul, or useMatMulQ on the int16 path.
func (buf *useBuffers) matMul(dst, a []float32, n int, w *usePanels, bias, add []float32, relu bool, workers int) {
	if buf.quant {
		useMatMulQ(dst, a, n, w, bias, add, relu, workers, buf.qa, buf.qs)
		return
	}
	useMatMul(dst, a, n, w, bias, add, relu, workers)
}

// apply runs the layer over x ([n][L.in]) and returns its output
// ([n][L.out], in buf.l): x + attention(LN(x)), then that plus
// FFN(LN(that)), where the first residual is projected to L.out when the
// widths differ. x may be buf.l.
//
// When pooled is not nil, apply returns instead each text's mean of its
// output rows in pooled (one row a text, zeros for a text without pieces):
// the FFN's second product and the residual are linear, so the mean of
// f·W + b + h over a text's rows is mean(f)·W + b + mean(h), one product
// a text instead of one a piece. The result differs from pooling the
// output only by float rounding.
func (L *useLayer) apply(x []float32, n int, segs []useSeg, eps float32, buf *useBuffers, workers int, pooled []float32) []float32 {
	in, out := L.in, L.out
	ln := buf.a[:n*in]
	useLayerNorm(ln, x[:n*in], in, L.ln1g, L.ln1b, eps)
	qkv := buf.qkv[:n*3*in]
	buf.matMul(qkv, ln, n, L.qkv, L.qkvB, nil, false, workers)
	var residual []float32
	if L.res != nil {
		residual = buf.res[:n*out]
		buf.matMul(residual, x, n, L.res, L.resB, nil, false, workers)
	} else {
		residual = x[:n*out]
	}
	att := ln // no longer needed
	useAttention(att, qkv, in, L.headWidthDim, L.qscale, segs, buf.attn, workers)
	h := buf.h[:n*out]
	buf.matMul(h, att, n, L.proj, L.projB, residual, false, workers)
	ln2 := buf.l[:n*out] // x, when it is buf.l, is no longer needed
	useLayerNorm(ln2, h, out, L.ln2g, L.ln2b, eps)
	f := buf.f[:n*useFFNDim]
	buf.matMul(f, ln2, n, L.ffn1, L.ffn1B, nil, true, workers)
	if pooled != nil {
		nt := len(segs)
		fm, hm := buf.fm[:nt*useFFNDim], buf.hm[:nt*out]
		poolRows(fm, f, useFFNDim, segs)
		poolRows(hm, h, out, segs)
		buf.matMul(pooled, fm, nt, L.ffn2, L.ffn2B, hm, false, workers)
		for t, s := range segs {
			if s.n == 0 {
				clear(pooled[t*out : (t+1)*out])
			}
		}
		return pooled
	}
	y := ln2 // no longer needed
	buf.matMul(y, f, n, L.ffn2, L.ffn2B, h, false, workers)
	return y
}

// useAttention computes multi-head self-attention within each text:
// dst's row i gets, for every head, the softmax(q·k × scale)-weighted sum
// of the values of the same text's pieces. qkv holds each row's queries,
// keys and values, d wide each, heads dh wide. Both products of a head
// (scores = Q·Kᵀ, output = P·V) run on the matrix kernels, the keys and
// values packed in panels (the keys padded with zeros to a whole panel) in
// scratch, useAttnFloats of it per worker.
func useAttention(dst, qkv []float32, d, dh int, scale float32, segs []useSeg, scratch []float32, workers int) {
	heads := d / dh
	ld := 3 * d
	run := func(wk, j int) {
		s, h := segs[j/heads], j%heads
		if s.n == 0 {
			return
		}
		tp := (s.n + usePanel - 1) &^ (usePanel - 1)
		sc := scratch[wk*useAttnFloats : (wk+1)*useAttnFloats]
		kp, vp, p := sc[:tp*dh], sc[tp*dh:2*tp*dh], sc[2*tp*dh:2*tp*dh+s.n*tp]
		// Kᵀ ([dh][tp]) in panels of 16 keys.
		clear(kp[(tp-usePanel)*dh:])
		for t := range s.n {
			key := qkv[(s.start+t)*ld+d+h*dh:][:dh]
			panel := kp[(t/usePanel)*usePanel*dh+t%usePanel:]
			for x, v := range key {
				panel[x*usePanel] = v
			}
		}
		keys := usePanels{k: dh, m: tp, data: kp}
		gemm(p, tp, qkv[s.start*ld+h*dh:], ld, s.n, &keys, 0, tp/usePanel, nil, nil, 0, false)
		for i := range s.n {
			useSoftmax(p[i*tp:(i+1)*tp], s.n, scale)
		}
		// V ([tp][dh], the padding rows zero) in panels of 16 columns.
		for c := 0; c < dh; c += usePanel {
			panel := vp[c*tp : (c+usePanel)*tp]
			for t := range s.n {
				copy(panel[t*usePanel:(t+1)*usePanel], qkv[(s.start+t)*ld+2*d+h*dh+c:])
			}
			clear(panel[s.n*usePanel:])
		}
		values := usePanels{k: tp, m: dh, data: vp}
		gemm(dst[s.start*d+h*dh:], d, p, tp, s.n, &values, 0, dh/usePanel, nil, nil, 0, false)
	}
	parallelW(len(segs)*heads, min(workers, len(scratch)/useAttnFloats), run)
}
