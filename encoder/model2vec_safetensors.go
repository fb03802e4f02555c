package encoder

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
)

// m2vMaxHeader bounds the JSON header of a safetensors file, as the
// reference Rust reader does, so that a crafted length cannot make us
// allocate gigabytes before reading a byte of it.
const m2vMaxHeader = 100 << 20

// m2vTensorInfo is one entry of a safetensors header, checked against the
// file: its bytes lie inside the data section and their count is what the
// dtype and shape say.
type m2vTensorInfo struct {
	name  string
	dtype string
	shape []int64
	begin int64 // offset in the data section
	n     int64 // number of elements
}

// m2vSafetensors is a parsed safetensors header over the file it came from.
type m2vSafetensors struct {
	r       io.ReaderAt
	name    string // the file, for errors
	dataOff int64  // where the data section starts in the file
	tensors map[string]m2vTensorInfo
}

// m2vDtypeSize gives the byte size of the element types we can decode.
// Other dtypes may appear in a header (and are checked for bounds as far as
// possible) but are refused when a tensor of that type is needed.
var m2vDtypeSize = map[string]int64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
}

// m2vParseSafetensors reads and checks the header of a safetensors file of
// the given size: an 8-byte little-endian header length, then a JSON object
// mapping tensor names to {dtype, shape, data_offsets}, then the data. Every
// offset is checked against the file size, so reading a tensor afterwards
// never reads or allocates more than the file holds.
func m2vParseSafetensors(r io.ReaderAt, size int64, name string) (*m2vSafetensors, error) {
	var lenBuf [8]byte
	if size < 8 {
		return nil, fmt.Errorf("%w: %s: %d bytes, too short for the 8-byte header length", ErrModel2VecInvalid, name, size)
	}
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("%w: %s: read header length: %v", ErrModel2VecInvalid, name, err)
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen > m2vMaxHeader || hlen > uint64(size-8) {
		return nil, fmt.Errorf("%w: %s: header length %d does not fit in a file of %d bytes (at most %d)", ErrModel2VecInvalid, name, hlen, size, min(size-8, m2vMaxHeader))
	}
	header := make([]byte, hlen)
	if _, err := r.ReadAt(header, 8); err != nil {
		return nil, fmt.Errorf("%w: %s: read header: %v", ErrModel2VecInvalid, name, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("%w: %s: header is not a JSON object: %v", ErrModel2VecInvalid, name, err)
	}
	st := &m2vSafetensors{r: r, name: name, dataOff: 8 + int64(hlen), tensors: make(map[string]m2vTensorInfo, len(raw))}
	dataLen := size - st.dataOff
	for key, msg := range raw {
		if key == "__metadata__" {
			continue
		}
		var e struct {
			Dtype       string  `json:"dtype"`
			Shape       []int64 `json:"shape"`
			DataOffsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%w: %s: tensor %q: %v", ErrModel2VecInvalid, name, key, err)
		}
		if len(e.DataOffsets) != 2 {
			return nil, fmt.Errorf("%w: %s: tensor %q: data_offsets has %d values, want 2", ErrModel2VecInvalid, name, key, len(e.DataOffsets))
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin < 0 || end < begin || end > dataLen {
			return nil, fmt.Errorf("%w: %s: tensor %q: data_offsets [%d, %d] outside the %d bytes of data", ErrModel2VecInvalid, name, key, begin, end, dataLen)
		}
		n := int64(1)
		for _, d := range e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("%w: %s: tensor %q: negative shape %v", ErrModel2VecInvalid, name, key, e.Shape)
			}
			hi, lo := bits.Mul64(uint64(n), uint64(d))
			if hi != 0 || lo > math.MaxInt64 {
				return nil, fmt.Errorf("%w: %s: tensor %q: shape %v overflows", ErrModel2VecInvalid, name, key, e.Shape)
			}
			n = int64(lo)
		}
		if sz, ok := m2vDtypeSize[e.Dtype]; ok {
			// n*sz cannot overflow silently: compare by division.
			if end-begin != n*sz || n > (end-begin)/max(sz, 1) {
				return nil, fmt.Errorf("%w: %s: tensor %q: shape %v of %s needs %s bytes, data_offsets give %d", ErrModel2VecInvalid, name, key, e.Shape, e.Dtype, m2vBytesString(n, sz), end-begin)
			}
		}
		st.tensors[key] = m2vTensorInfo{name: key, dtype: e.Dtype, shape: e.Shape, begin: begin, n: n}
	}
	return st, nil
}

// m2vBytesString prints n*sz, or "more than 2^63" when that overflows.
func m2vBytesString(n, sz int64) string {
	hi, lo := bits.Mul64(uint64(n), uint64(sz))
	if hi != 0 || lo > math.MaxInt64 {
		return "more than 2^63"
	}
	return fmt.Sprint(lo)
}

// names returns the tensor names, sorted, for error messages.
func (st *m2vSafetensors) names() []string {
	out := make([]string, 0, len(st.tensors))
	for k := range st.tensors {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// m2vFloatDtypes are the element types that m2vFloats decodes.
const m2vFloatDtypes = "F32, F16, BF16, F64, I8"

// floats decodes a tensor of a float type (or I8, whose values are used as
// they are, as numpy does for an int8-quantised model2vec model) into
// float32s. The tensor is read in chunks, so memory is the output plus a
// small buffer.
func (st *m2vSafetensors) floats(t m2vTensorInfo) ([]float32, error) {
	var dec func(dst []float32, src []byte)
	switch t.dtype {
	case "F32":
		dec = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
		}
	case "F16":
		dec = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = m2vHalfToFloat(binary.LittleEndian.Uint16(src[2*i:]))
			}
		}
	case "BF16":
		dec = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
			}
		}
	case "F64":
		dec = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
			}
		}
	case "I8":
		dec = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = float32(int8(src[i]))
			}
		}
	default:
		return nil, fmt.Errorf("%w: %s: tensor %q has dtype %q; supported: %s", ErrModel2VecUnsupported, st.name, t.name, t.dtype, m2vFloatDtypes)
	}
	sz := m2vDtypeSize[t.dtype]
	out := make([]float32, t.n)
	err := st.chunks(t, sz, func(i int64, chunk []byte) { dec(out[i:i+int64(len(chunk))/sz], chunk) })
	return out, err
}

// ints decodes a tensor of an integer type into int64s.
func (st *m2vSafetensors) ints(t m2vTensorInfo) ([]int64, error) {
	var conv func([]byte) int64
	switch t.dtype {
	case "I64":
		conv = func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }
	case "I32":
		conv = func(b []byte) int64 { return int64(int32(binary.LittleEndian.Uint32(b))) }
	case "I16":
		conv = func(b []byte) int64 { return int64(int16(binary.LittleEndian.Uint16(b))) }
	case "I8":
		conv = func(b []byte) int64 { return int64(int8(b[0])) }
	case "U8":
		conv = func(b []byte) int64 { return int64(b[0]) }
	default:
		return nil, fmt.Errorf("%w: %s: tensor %q has dtype %q; supported: I64, I32, I16, I8, U8", ErrModel2VecUnsupported, st.name, t.name, t.dtype)
	}
	sz := m2vDtypeSize[t.dtype]
	out := make([]int64, t.n)
	err := st.chunks(t, sz, func(i int64, chunk []byte) {
		for off := int64(0); off < int64(len(chunk)); off += sz {
			out[i] = conv(chunk[off : off+sz])
			i++
		}
	})
	return out, err
}

// chunks reads the bytes of t in chunks of whole elements, about 64 KiB
// each, and calls f with each chunk and the index of its first element.
func (st *m2vSafetensors) chunks(t m2vTensorInfo, sz int64, f func(int64, []byte)) error {
	sr := io.NewSectionReader(st.r, st.dataOff+t.begin, t.n*sz)
	buf := make([]byte, min(t.n, (64<<10)/sz)*sz)
	for i := int64(0); i < t.n; {
		chunk := buf[:min(t.n-i, int64(len(buf))/sz)*sz]
		if _, err := io.ReadFull(sr, chunk); err != nil {
			return fmt.Errorf("%w: %s: tensor %q: read elements %d and on: %v", ErrModel2VecInvalid, st.name, t.name, i, err)
		}
		f(i, chunk)
		i += int64(len(chunk)) / sz
	}
	return nil
}

// m2vHalfToFloat converts an IEEE 754 binary16 value to float32, exactly
// (every half is representable), subnormals, infinities and NaNs included.
func m2vHalfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0: // ±0
		return math.Float32frombits(sign)
	default: // subnormal: mant × 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
}
