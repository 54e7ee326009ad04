package supervise

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// A log larger than the window TailFile reads still yields its last lines.
func TestTailFileOfALargeLog(t *testing.T) {
	var b strings.Builder
	for i := range 20000 {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	if b.Len() <= tailWindow {
		t.Fatalf("test log of %d bytes does not exceed the %d-byte window", b.Len(), tailWindow)
	}
	path := filepath.Join(t.TempDir(), "big.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("line 19997\nline 19998\nline 19999", TailFile(path, 3)); diff != "" {
		t.Errorf("TailFile (-want +got):\n%s", diff)
	}
}

func TestTailFileOfAMissingLogSaysSo(t *testing.T) {
	got := TailFile(filepath.Join(t.TempDir(), "missing.log"), 3)
	if !strings.HasPrefix(got, "(cannot read log: ") {
		t.Errorf("TailFile of a missing file = %q, want a note that it cannot be read", got)
	}
}
