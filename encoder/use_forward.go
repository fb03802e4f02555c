package encoder

import (
	"math"
	"sync"
	"sync/atomic"
)

// useSeg is one text's rows in a batch: rows start..start+n of every
// activation matrix.
type useSeg struct{ start, n int }

// forward embeds the texts whose piece ids (at most useMaxPieces each) are
// given, all at once: the pieces of all texts are the rows of one matrix,
// so that every matrix product covers the whole batch, and only attention
// and pooling look at where a text starts and ends. It returns one unit
// vector per text.
func (w *useWeights) forward(ids [][]int32, workers int) [][]float32 {
	segs := make([]useSeg, len(ids))
	n := 0
	for t, p := range ids {
		segs[t] = useSeg{n, len(p)}
		n += len(p)
	}
	// Rows are computed four at a time: a batch is padded with zero rows,
	// which no text reads.
	n = (n + 3) &^ 3
	// Input: each piece's embedding twice plus the timing signal of its
	// position — the graph adds the embedding to the embedding-plus-timing
	// (the stack's input and the first layer's AddTimingSignal both keep
	// it), in this order.
	x := make([]float32, n*useEmbedDim)
	for t, p := range ids {
		for pos, id := range p {
			row := x[(segs[t].start+pos)*useEmbedDim:][:useEmbedDim]
			e := w.emb[int(id)*useEmbedDim:][:useEmbedDim]
			tm := w.timing[pos*useEmbedDim:][:useEmbedDim]
			for i := range row {
				row[i] = e[i] + (e[i] + tm[i])
			}
		}
	}
	for l := range w.layers {
		x = w.layers[l].apply(x, n, segs, w.lnEps, workers)
	}
	// Mean over each text's pieces (an empty text pools to zeros, as the
	// graph's division by max(count, 1) gives), then the tanh layer and L2
	// normalisation.
	pooled := make([]float32, len(ids)*useModelDim)
	for t, s := range segs {
		p := pooled[t*useModelDim:][:useModelDim]
		for r := s.start; r < s.start+s.n; r++ {
			row := x[r*useModelDim:][:useModelDim]
			for i, v := range row {
				p[i] += v
			}
		}
		d := float32(max(s.n, 1))
		for i := range p {
			p[i] /= d
		}
	}
	h := make([]float32, len(ids)*useOutDim)
	useMatMul(h, pooled, len(ids), useModelDim, w.tanh, useOutDim, w.tanhB, nil, false, workers)
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

// apply runs the layer over x ([n][L.in]) and returns its output
// ([n][L.out]): x + attention(LN(x)), then that plus FFN(LN(that)), where
// the first residual is projected to L.out when the widths differ.
func (L *useLayer) apply(x []float32, n int, segs []useSeg, eps float32, workers int) []float32 {
	in, out := L.in, L.out
	ln := make([]float32, n*in)
	useLayerNorm(ln, x, in, L.ln1g, L.ln1b, eps)
	qkv := make([]float32, n*3*in)
	useMatMul(qkv, ln, n, in, L.qkv, 3*in, L.qkvB, nil, false, workers)
	residual := x
	if L.res != nil {
		residual = make([]float32, n*out)
		useMatMul(residual, x, n, in, L.res, out, L.resB, nil, false, workers)
	}
	att := ln // same size, no longer needed
	useAttention(att, qkv, in, L.headWidthDim, L.qscale, segs, workers)
	h := make([]float32, n*out)
	useMatMul(h, att, n, in, L.proj, out, L.projB, residual, false, workers)
	ln2 := make([]float32, n*out)
	useLayerNorm(ln2, h, out, L.ln2g, L.ln2b, eps)
	f := make([]float32, n*useFFNDim)
	useMatMul(f, ln2, n, out, L.ffn1, useFFNDim, L.ffn1B, nil, true, workers)
	y := ln2 // same size, no longer needed
	useMatMul(y, f, n, useFFNDim, L.ffn2, out, L.ffn2B, h, false, workers)
	return y
}

// useLayerNorm normalises each row of x (width d) to zero mean and unit
// variance, then scales by g and shifts by b, as the graph does:
// g·rsqrt(var+eps)·(x−mean) + b.
func useLayerNorm(dst, x []float32, d int, g, b []float32, eps float32) {
	for r := 0; r+d <= len(x); r += d {
		row, o := x[r:r+d], dst[r:r+d]
		var s float32
		for _, v := range row {
			s += v
		}
		mean := s / float32(d)
		var q float32
		for _, v := range row {
			q += (v - mean) * (v - mean)
		}
		rs := float32(1 / math.Sqrt(float64(q/float32(d)+eps)))
		for i, v := range row {
			o[i] = g[i]*rs*(v-mean) + b[i]
		}
	}
}

// useAttention computes multi-head self-attention within each text:
// dst's row i gets, for every head, the softmax(q·k × scale)-weighted sum
// of the values of the same text's pieces. qkv holds each row's queries,
// keys and values, d wide each, heads dh wide. Both products of a head
// (scores = Q·Kᵀ, output = P·V) run on the matrix kernel, the values
// transposed and the lengths padded with zeros to what it needs.
func useAttention(dst, qkv []float32, d, dh int, scale float32, segs []useSeg, workers int) {
	heads := d / dh
	jobs := len(segs) * heads
	run := func(j int) {
		s, h := segs[j/heads], j%heads
		if s.n == 0 {
			return
		}
		tr := (s.n + 3) &^ 3 // rows, padded for the 4-row kernel
		tp := (s.n + 7) &^ 7 // keys, padded for the 8-wide kernel
		q := make([]float32, tr*dh)
		for i := range s.n {
			qi := qkv[(s.start+i)*3*d+h*dh:][:dh]
			for x, v := range qi {
				q[i*dh+x] = v * scale
			}
		}
		p := make([]float32, tr*tp)
		useGemm(p, tp, q, dh, qkv[s.start*3*d+d+h*dh:], 3*d, tr, s.n, dh)
		for i := range s.n {
			row := p[i*tp : i*tp+s.n]
			m := float32(math.Inf(-1))
			for _, v := range row {
				m = max(m, v)
			}
			var sum float32
			for t, v := range row {
				row[t] = float32(math.Exp(float64(v - m)))
				sum += row[t]
			}
			for t := range row {
				row[t] /= sum
			}
		}
		vt := make([]float32, dh*tp)
		for t := range s.n {
			v := qkv[(s.start+t)*3*d+2*d+h*dh:][:dh]
			for x, e := range v {
				vt[x*tp+t] = e
			}
		}
		o := make([]float32, tr*dh)
		useGemm(o, dh, p, tp, vt, tp, tr, dh, tp)
		for i := range s.n {
			copy(dst[(s.start+i)*d+h*dh:][:dh], o[i*dh:(i+1)*dh])
		}
	}
	workers = min(workers, jobs)
	if workers <= 1 {
		for j := range jobs {
			run(j)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				j := int(next.Add(1) - 1)
				if j >= jobs {
					return
				}
				run(j)
			}
		})
	}
	wg.Wait()
}
