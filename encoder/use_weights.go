package encoder

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
)

// useLiteBin is Universal Sentence Encoder Lite's vocabulary and weights,
// converted by internal/usegen (see usedata/NOTICE).
//
//go:embed usedata/use-lite.bin
var useLiteBin []byte

// Dimensions of Universal Sentence Encoder Lite.
const (
	useEmbedDim  = 256  // piece embeddings and the first layer's input
	useModelDim  = 512  // transformer width after the first layer
	useHeads     = 4    // attention heads in each layer
	useMaxPieces = 128  // pieces read from a text; the rest are dropped
	useFFNDim    = 1536 // feed-forward inner width
	useOutDim    = 512  // the sentence vector
)

// useLayer is one pre-layer-norm transformer layer. Matrices ([in][out])
// are packed in panels for the kernels (see usePanels).
type useLayer struct {
	in, out      int // widths of the layer's input and output
	ln1g, ln1b   []float32
	qkv          *usePanels // [in][3·in]: queries, keys, values
	qkvB         []float32
	qscale       float32    // 1/√(head width)
	proj         *usePanels // [in][out]: attention output
	projB        []float32
	res          *usePanels // [in][out]: the residual's projection when in ≠ out, else nil
	resB         []float32
	ln2g, ln2b   []float32
	ffn1         *usePanels // [out][useFFNDim]
	ffn1B        []float32
	ffn2         *usePanels // [useFFNDim][out]
	ffn2B        []float32
	headWidthDim int
}

// useWeights is the whole model: vectors in float32, matrices in panels.
type useWeights struct {
	pieces *usePieces
	emb    []uint16  // [vocab+2][useEmbedDim], float16 as stored (widened per piece)
	timing []float32 // [useMaxPieces][useEmbedDim]: sin, cos of position × timescale
	layers [2]useLayer
	tanh   *usePanels // [useModelDim][useOutDim]
	tanhB  []float32
	lnEps  float32
	l2Eps  float32
}

var (
	useOnce sync.Once
	useW    *useWeights
	useErr  error
)

// loadUSE decodes the embedded model once for the process: every [USE]
// shares the same read-only weights (about 15 MB: the matrices and the
// piece embeddings stay in float16, see usePanels).
func loadUSE() (*useWeights, error) {
	useOnce.Do(func() { useW, useErr = decodeUSE(useLiteBin) })
	return useW, useErr
}

var errUSEData = errors.New("encoder: corrupt embedded Universal Sentence Encoder data")

// useReader reads the little-endian records of use-lite.bin.
type useReader struct {
	b   []byte
	err error
}

func (r *useReader) next(n int) []byte {
	if r.err != nil || n > len(r.b) {
		r.err = errUSEData
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
func (r *useReader) u8() int          { return int(r.next(1)[0]) }
func (r *useReader) u16() int         { return int(binary.LittleEndian.Uint16(r.next(2))) }
func (r *useReader) u32() int         { return int(binary.LittleEndian.Uint32(r.next(4))) }
func (r *useReader) str(n int) string { return string(r.next(n)) }

func decodeUSE(b []byte) (*useWeights, error) {
	r := &useReader{b: b}
	if r.str(8) != "TSUSE001" {
		return nil, errUSEData
	}
	nv := r.u32()
	if r.err != nil || nv > 1<<20 {
		return nil, errUSEData
	}
	pieces := make([]string, nv)
	scores := make([]float64, nv)
	for i := range nv {
		pieces[i] = r.str(r.u16())
		scores[i] = math.Float64frombits(binary.LittleEndian.Uint64(r.next(8)))
	}
	type tensor struct {
		shape []int
		data  []float32 // float32, or nil
		half  []uint16  // float16, or nil
	}
	ts := map[string]tensor{}
	nt := r.u32()
	for range nt {
		if r.err != nil {
			break
		}
		name := r.str(r.u16())
		shape := make([]int, r.u8())
		n := 1
		for i := range shape {
			shape[i] = r.u32()
			n *= shape[i]
		}
		bits := r.u8()
		if r.err != nil || n > len(r.b) || bits != 16 && bits != 32 {
			return nil, errUSEData
		}
		t := tensor{shape: shape}
		if bits == 16 {
			raw := r.next(2 * n)
			t.half = make([]uint16, n)
			for i := range t.half {
				t.half[i] = binary.LittleEndian.Uint16(raw[2*i:])
			}
		} else {
			raw := r.next(4 * n)
			t.data = make([]float32, n)
			for i := range t.data {
				t.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		}
		ts[name] = t
	}
	if r.err != nil {
		return nil, r.err
	}
	var missing error
	lookup := func(name string, shape ...int) (tensor, bool) {
		t, ok := ts[name]
		if !ok || len(t.shape) != len(shape) {
			missing = fmt.Errorf("%w: tensor %s", errUSEData, name)
			return t, false
		}
		for i := range shape {
			if t.shape[i] != shape[i] {
				missing = fmt.Errorf("%w: tensor %s has shape %v, want %v", errUSEData, name, t.shape, shape)
				return t, false
			}
		}
		return t, true
	}
	get := func(name string, shape ...int) []float32 {
		t, ok := lookup(name, shape...)
		if !ok {
			return nil
		}
		if t.half != nil {
			t.data = make([]float32, len(t.half))
			for i, h := range t.half {
				t.data[i] = f16to32(h)
			}
		}
		return t.data
	}
	// getHalf returns the float16 tensor name.
	getHalf := func(name string, shape ...int) []uint16 {
		t, ok := lookup(name, shape...)
		if ok && t.half == nil {
			missing = fmt.Errorf("%w: tensor %s is not float16", errUSEData, name)
		}
		return t.half
	}
	// packed returns the [in][out] matrix name packed in panels, in
	// float16 if it is stored so.
	packed := func(name string, in, out int) *usePanels {
		t, ok := lookup(name, in, out)
		switch {
		case !ok:
			return nil
		case t.half != nil:
			return newHalfPanels(t.half, in, out)
		}
		return newPanels(t.data, in, out)
	}
	scalar := func(name string) float32 {
		if d := get(name); len(d) == 1 {
			return d[0]
		}
		missing = fmt.Errorf("%w: scalar %s", errUSEData, name)
		return 0
	}
	w := &useWeights{
		pieces: newUSEPieces(pieces, scores),
		emb:    getHalf("emb", nv+2, useEmbedDim),
		tanh:   packed("tanh.w", useModelDim, useOutDim),
		tanhB:  get("tanh.b", useOutDim),
		lnEps:  scalar("ln.eps"),
		l2Eps:  scalar("l2.eps"),
	}
	timescales := get("timescales", useEmbedDim/2)
	for l, in := range []int{useEmbedDim, useModelDim} {
		p := fmt.Sprintf("l%d.", l)
		out := useModelDim
		L := useLayer{
			in: in, out: out, headWidthDim: in / useHeads,
			ln1g: get(p+"ln1.g", in), ln1b: get(p+"ln1.b", in),
			qkv: packed(p+"qkv.w", in, 3*in), qkvB: get(p+"qkv.b", 3*in),
			qscale: scalar(p + "qscale"),
			proj:   packed(p+"out.w", in, out), projB: get(p+"out.b", out),
			ln2g: get(p+"ln2.g", out), ln2b: get(p+"ln2.b", out),
			ffn1: packed(p+"ffn1.w", out, useFFNDim), ffn1B: get(p+"ffn1.b", useFFNDim),
			ffn2: packed(p+"ffn2.w", useFFNDim, out), ffn2B: get(p+"ffn2.b", out),
		}
		if in != out {
			L.res, L.resB = packed(p+"res.w", in, out), get(p+"res.b", out)
		}
		w.layers[l] = L
	}
	if missing != nil {
		return nil, missing
	}
	// The timing signal as the graph computes it, in float32: position ×
	// timescale, then sin for the first half and cos for the second.
	half := useEmbedDim / 2
	w.timing = make([]float32, useMaxPieces*useEmbedDim)
	for pos := range useMaxPieces {
		for i, s := range timescales {
			x := float64(float32(pos) * s)
			w.timing[pos*useEmbedDim+i] = float32(math.Sin(x))
			w.timing[pos*useEmbedDim+half+i] = float32(math.Cos(x))
		}
	}
	return w, nil
}

// f16to32 converts an IEEE 754 half-precision value.
func f16to32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
