package figures

import (
	"os"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	tests := map[string]struct {
		stat    string
		want    float64
		wantErr bool
	}{
		"plain": {
			stat: "1234 (kube-apiserver) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 0 0",
			want: 3,
		},
		"spaces and parens in the name": {
			stat: "99 (a (b) c) R 1 99 99 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0",
			want: 0.1,
		},
		"no name":    {stat: "1234 S 1", wantErr: true},
		"too short":  {stat: "1 (x) S 1 2 3", wantErr: true},
		"not number": {stat: "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 3 0", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseStatCPU(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseStatCPU error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("parseStatCPU = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCPUSecondsOfThisProcess(t *testing.T) {
	// Burn a little CPU so the process has used at least one tick.
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	s, err := cpuSeconds(os.Getpid())
	if err != nil {
		t.Fatalf("cpuSeconds: %v", err)
	}
	if s <= 0 || x == 0 {
		t.Errorf("cpuSeconds(self) = %v, want > 0", s)
	}
}
