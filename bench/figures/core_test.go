package figures

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBenchOutput(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/quotagate/quotagate/pkg/quota
cpu: Some CPU @ 2.00GHz
BenchmarkAdmitDecisions-2   	       3	 412345678 ns/op	    242000 decisions/s	 1234 B/op	      56 allocs/op
BenchmarkAdmitDecisions-2   	       3	 400000000 ns/op	    250000 decisions/s	 1234 B/op	      56 allocs/op
BenchmarkFreeingEvent/gated-elsewhere=1000-2         	  100000	     11000 ns/op	    2048 B/op	      30 allocs/op
BenchmarkFreeingEvent/gated-elsewhere=100000         	  100000	     12000 ns/op
BenchmarkBroken-2 notanumber 1 ns/op
PASS
ok  	github.com/quotagate/quotagate/pkg/quota	42.1s
`
	want := map[string]map[string][]float64{
		"BenchmarkAdmitDecisions": {
			"ns/op":       {412345678, 400000000},
			"decisions/s": {242000, 250000},
			"B/op":        {1234, 1234},
			"allocs/op":   {56, 56},
		},
		"BenchmarkFreeingEvent/gated-elsewhere=1000": {
			"ns/op": {11000}, "B/op": {2048}, "allocs/op": {30},
		},
		"BenchmarkFreeingEvent/gated-elsewhere=100000": {
			"ns/op": {12000},
		},
	}
	if diff := cmp.Diff(want, parseBenchOutput([]byte(out))); diff != "" {
		t.Errorf("parseBenchOutput (-want +got):\n%s", diff)
	}
}
