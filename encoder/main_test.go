package encoder_test

import (
	"os"
	"testing"

	"github.com/toolsift/toolsift/internal/testenv"
)

// TestMain fails the run when a test leaves goroutines of encoder running
// (USE spreads its matrix products over Workers goroutines; see
// testenv.Main).
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
