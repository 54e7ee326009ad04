package amounttest

import (
	"testing"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

func TestParseAndListRoundTrip(t *testing.T) {
	want := podtest.ParseList("requests.cpu=1500m,requests.memory=2Gi,count/pods=3,requests.memory@a100=100m")
	got := List(Parse("requests.cpu=1.5,requests.memory=2147483648,count/pods=3,requests.memory@a100=0.1"))
	if diff := podtest.ListDiff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if diff := podtest.ListDiff(podtest.ParseList("cpu=1"), podtest.ParseList("cpu=2")); diff == "" {
		t.Error("ListDiff finds cpu=1 and cpu=2 equal")
	}
}
