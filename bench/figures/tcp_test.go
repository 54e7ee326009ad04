package figures

import (
	"bufio"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCountTCP(t *testing.T) {
	// Port 9443 is 24E3.
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:24E3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:24E3 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:A1B3 0100007F:24E3 06 00000000:00000000 03:00000F9B 00000000     0        0 0 3 0000000000000000
   3: 0100007F:A1B4 0100007F:24E3 06 00000000:00000000 03:00000F9B 00000000     0        0 0 3 0000000000000000
   4: 0100007F:1F90 0100007F:A1B5 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
`
	got := map[string]int{}
	if err := countTCP(bufio.NewScanner(strings.NewReader(table)), 9443, got); err != nil {
		t.Fatalf("countTCP: %v", err)
	}
	want := map[string]int{"state-10": 1, "established": 1, "time-wait": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("countTCP (-want +got):\n%s", diff)
	}
}
