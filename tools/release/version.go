package release

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// ParseVersion checks that v is a release version: a semantic version with a leading
// "v" (v1.2.3, v1.2.3-rc.1, v0.0.0-ci), the form of the git tag, the image tag and the
// chart's appVersion. It returns the version without the "v", the chart's version.
func ParseVersion(v string) (string, error) {
	bare, ok := strings.CutPrefix(v, "v")
	if !ok {
		return "", fmt.Errorf("version %q: must start with v, as in v1.2.3 (the git tag and image tag)", v)
	}
	if _, err := semver.StrictNewVersion(bare); err != nil {
		return "", fmt.Errorf("version %q: not a semantic version vMAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]: %w", v, err)
	}
	return bare, nil
}
