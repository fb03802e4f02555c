package textproc_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/textproc"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"get_weather", []string{"get", "weather"}},
		{"getWeatherForecast", []string{"get", "weather", "forecast"}},
		{"math.factorial", []string{"math", "factorial"}},
		{"github__create_issue", []string{"github", "create", "issue"}},
		{"list-open-PRs", []string{"list", "open", "p", "rs"}},
		{"HTTPServer", []string{"http", "server"}},
		{"parseJSONBody", []string{"parse", "json", "body"}},
		{"sha256sum", []string{"sha", "256", "sum"}},
		{"calculate_triangle_area__v2", []string{"calculate", "triangle", "area", "v", "2"}},
		{"Find the area: 10 units, (x^2)!", []string{"find", "the", "area", "10", "units", "x", "2"}},
		{"don't stop", []string{"dont", "stop"}},
		{"users' data", []string{"users", "data"}},
		{"ÜberCafé naïve", []string{"über", "café", "naïve"}},
		{"ALLCAPS", []string{"allcaps"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, textproc.Words(tt.in)); diff != "" {
				t.Errorf("Words(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"caresses", "caress"},
		{"ponies", "poni"},
		{"cats", "cat"},
		{"status", "status"},
		{"analysis", "analysis"},
		{"agreed", "agree"},
		{"feed", "feed"},
		{"calculated", "calculate"},
		{"calculating", "calculate"},
		{"calculates", "calculate"},
		{"calculate", "calculate"},
		{"hopping", "hop"},
		{"falling", "fall"},
		{"filing", "file"},
		{"sing", "sing"},
		{"weathers", "weather"},
		{"city", "citi"},
		{"cities", "citi"},
		{"sky", "sky"},
		{"searching", "search"},
		{"go", "go"},
		{"mp3s", "mp3s"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := textproc.Stem(tt.in); got != tt.want {
				t.Errorf("Stem(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"getWeatherForecast for cities", []string{"get", "weather", "forecast", "citi"}},
		{"Calculate the factorial of a given number.", []string{"calculate", "factorial", "given", "number"}},
		{"math.factorial", []string{"math", "factorial"}},
		{"the of and", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := textproc.Terms(tt.in)
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Terms(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func ExampleTerms() {
	fmt.Println(textproc.Terms("getWeatherForecast for cities"))
	fmt.Println(textproc.Terms("github__list_open_issues"))
	// Output:
	// [get weather forecast citi]
	// [github list open issue]
}
