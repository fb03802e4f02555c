package toolindex_test

import (
	"os"
	"testing"

	"github.com/toolsift/toolsift/internal/testenv"
)

// TestMain fails the run when a test leaves goroutines of toolindex
// running (Upsert embeds batches on several; see testenv.Main).
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
