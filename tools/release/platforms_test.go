package release

import (
	"slices"
	"testing"
)

func TestParsePlatforms(t *testing.T) {
	got, err := ParsePlatforms("linux/amd64, linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Platform{{"linux", "amd64"}, {"linux", "arm64"}}; !slices.Equal(got, want) {
		t.Errorf("ParsePlatforms = %v, want %v", got, want)
	}
	for _, bad := range []string{"windows/amd64", "linux", "", "linux/amd64,"} {
		if p, err := ParsePlatforms(bad); err == nil {
			t.Errorf("ParsePlatforms(%q) = %v, want an error", bad, p)
		}
	}
}
