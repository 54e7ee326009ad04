package version

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBuildInfoCarriesTheVersion(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewBuildInfoCollector())
	want := `
# HELP quotagate_build_info Always 1; its labels say which quotagate build is running.
# TYPE quotagate_build_info gauge
quotagate_build_info{go_version="` + Get().GoVersion + `",revision="` + Revision() + `",version="` + Version() + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "quotagate_build_info"); err != nil {
		t.Error(err)
	}
}

func TestLDFlagsNameThisPackage(t *testing.T) {
	got := LDFlags("v1.2.3", "abc")
	want := "-s -w -X github.com/quotagate/quotagate/internal/version.version=v1.2.3 -X github.com/quotagate/quotagate/internal/version.revision=abc"
	if got != want {
		t.Errorf("LDFlags = %q, want %q", got, want)
	}
}
