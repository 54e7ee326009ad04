package localcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLastLines(t *testing.T) {
	tests := map[string]struct {
		data string
		n    int
		want string
	}{
		"fewer lines than asked": {data: "a\nb\n", n: 3, want: "a\nb"},
		"more lines than asked":  {data: "a\nb\nc\nd\n", n: 2, want: "c\nd"},
		"no trailing newline":    {data: "a\nb\nc", n: 2, want: "b\nc"},
		"empty":                  {data: "", n: 2, want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lastLines([]byte(tc.data), tc.n)); diff != "" {
				t.Errorf("lastLines (-want +got):\n%s", diff)
			}
		})
	}
}
