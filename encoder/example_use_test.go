package encoder_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/encoder"
)

// Rank two tool descriptions for a request by the cosine of their vectors.
func ExampleUSE() {
	u, err := encoder.NewUSE(nil)
	if err != nil {
		log.Fatal(err)
	}
	tools := []string{
		"send_email: Send an email message to a recipient with a subject and body.",
		"get_forecast: Get the weather forecast for a city for the next days.",
	}
	vecs, err := u.Embed(context.Background(), append([]string{"will it rain in Berlin tomorrow?"}, tools...))
	if err != nil {
		log.Fatal(err)
	}
	query, docs := vecs[0], vecs[1:]
	cos := func(i int) float32 { // vectors have unit length
		var s float32
		for j := range query {
			s += query[j] * docs[i][j]
		}
		return s
	}
	order := []int{0, 1}
	slices.SortFunc(order, func(a, b int) int {
		if cos(a) > cos(b) {
			return -1
		}
		return 1
	})
	for _, i := range order {
		name, _, _ := strings.Cut(tools[i], ":")
		fmt.Printf("%s %.2f\n", name, cos(i))
	}
	fmt.Println(len(query), u.ID())
	// Output:
	// get_forecast 0.45
	// send_email 0.01
	// 512 use-lite:v1:512
}
