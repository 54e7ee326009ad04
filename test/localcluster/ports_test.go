package localcluster

import "testing"

// Ports handed out in one call, and in calls one after the other, are all distinct.
func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := FreePorts(25)
	if err != nil {
		t.Fatal(err)
	}
	more, err := FreePorts(25)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range append(ports, more...) {
		if seen[p] {
			t.Fatalf("port %d handed out twice in %v", p, ports)
		}
		seen[p] = true
	}
}
