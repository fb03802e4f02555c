package encoder_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/toolsift/toolsift/encoder"
)

// A real model is a directory downloaded once (for example
// minishlab/potion-retrieval-32M); here a tiny one is written to a
// temporary directory so that the example runs offline.
func ExampleLoadModel2Vec() {
	parent, err := os.MkdirTemp("", "model2vec-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(parent)
	dir, err := makeTinyModel(parent, "tiny-model", "F16", true)
	if err != nil {
		log.Fatal(err)
	}

	m, err := encoder.LoadModel2Vec(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	texts := []string{"Search the weather", "Café tools!"}
	vecs, err := m.Embed(context.Background(), texts)
	if err != nil {
		log.Fatal(err)
	}
	id := m.ID() // ends with a hash of the files and settings
	fmt.Println(id[:strings.LastIndexByte(id, ':')], m.Dim())
	for i, text := range texts {
		fmt.Printf("%q %q\n  %.3f\n", text, m.Tokens(text), vecs[i])
	}
	// Output:
	// model2vec:tiny-model:8 8
	// "Search the weather" ["search" "the" "weather"]
	//   [0.272 0.000 0.000 0.218 0.218 0.218 0.598 0.653]
	// "Café tools!" ["cafe" "tool" "##s" "!"]
	//   [0.000 0.711 0.158 0.000 0.513 0.395 0.158 0.158]
}
