package quota

import (
	"flag"
	"os"
	"testing"
)

// TestMain checks every memo of a family's claims against a fresh walk (lendclaims.go)
// in the tests, the randomized models' included; a benchmark measures the memo alone.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		verifyClaimsMemo = true
	}
	os.Exit(m.Run())
}
