package figures

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIntListSet(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    IntList
		wantErr bool
	}{
		"one":    {in: "5", want: IntList{5}},
		"spaces": {in: "0, 10000 ,50000", want: IntList{0, 10000, 50000}},
		"empty":  {in: "", wantErr: true},
		"word":   {in: "1,two", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var l IntList
			err := l.Set(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Set(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, l); diff != "" {
				t.Errorf("Set(%q) (-want +got):\n%s", tc.in, diff)
			}
			if !tc.wantErr && l.String() == "" {
				t.Errorf("String() of %v is empty", l)
			}
		})
	}
}

func TestWant(t *testing.T) {
	o := Options{figures: IntList{1, 3}}
	got := []bool{o.want(1), o.want(2), o.want(3)}
	if diff := cmp.Diff([]bool{true, false, true}, got); diff != "" {
		t.Errorf("want (-want +got):\n%s", diff)
	}
}
