package evalmetric_test

import (
	"fmt"

	"github.com/toolsift/toolsift/internal/evalmetric"
)

func ExampleRecall() {
	ranked := []string{"search_web", "get_weather", "send_email"}
	gold := [][]string{{"get_weather", "get_forecast"}, {"send_email"}}
	fmt.Printf("recall@1 %.2f  recall@2 %.2f  recall@3 %.2f  MRR %.2f\n",
		evalmetric.Recall(ranked, gold, 1), evalmetric.Recall(ranked, gold, 2),
		evalmetric.Recall(ranked, gold, 3), evalmetric.MRR(ranked, gold))
	// Output:
	// recall@1 0.00  recall@2 0.50  recall@3 1.00  MRR 0.50
}
