package quota

import (
	"flag"
	"os"
	"testing"
)

// TestMain checks every memo of a family's claims against a fresh walk (lendclaims.go),
// and that no pod an admission's wake left alone could be admitted (wake.go), in the
// tests, the randomized models' included; a benchmark measures the core alone.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		verifyClaimsMemo, verifySettled = true, true
	}
	os.Exit(m.Run())
}
