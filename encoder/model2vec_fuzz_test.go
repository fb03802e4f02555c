package encoder

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzModel2VecSafetensors feeds the safetensors reader arbitrary files:
// it must return an error or tensors that lie inside the file, never panic,
// and never allocate more than the file could hold. Seeds are in
// testdata/fuzz/FuzzModel2VecSafetensors.
func FuzzModel2VecSafetensors(f *testing.F) {
	header := []byte(`{"embeddings":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},"mapping":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}}`)
	valid := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	valid = append(valid, header...)
	valid = append(valid, 0, 0x3c, 0, 0xbc, 1, 0, 0xff, 0x7b, 1, 0, 0, 0)
	f.Add(valid)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := m2vParseSafetensors(bytes.NewReader(data), int64(len(data)), "fuzz.safetensors")
		if err != nil {
			return
		}
		for _, ti := range st.tensors {
			if sz, ok := m2vDtypeSize[ti.dtype]; ok && st.dataOff+ti.begin+ti.n*sz > int64(len(data)) {
				t.Fatalf("tensor %q of %d elements at %d overruns a file of %d bytes", ti.name, ti.n, ti.begin, len(data))
			}
			if v, err := st.floats(ti); err == nil && int64(len(v)) != ti.n {
				t.Fatalf("floats(%q) = %d values, want %d", ti.name, len(v), ti.n)
			}
			if v, err := st.ints(ti); err == nil && int64(len(v)) != ti.n {
				t.Fatalf("ints(%q) = %d values, want %d", ti.name, len(v), ti.n)
			}
		}
	})
}
