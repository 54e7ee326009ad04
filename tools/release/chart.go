package release

import (
	"fmt"
	"path/filepath"
	"time"

	"helm.sh/helm/v4/pkg/action"
)

// packageChart is `helm package charts/quotagate --version X.Y.Z --app-version vX.Y.Z
// -d outDir` with file times set to modTime, so the same commit packages the same bytes.
// It returns the path of the .tgz.
func packageChart(repoRoot, outDir, chartVersion, appVersion string, modTime time.Time) (string, error) {
	p := action.NewPackage()
	p.Version = chartVersion
	p.AppVersion = appVersion
	p.Destination = outDir
	p.SourceDateEpoch = &modTime
	path, err := p.Run(filepath.Join(repoRoot, "charts", "quotagate"), nil)
	if err != nil {
		return "", fmt.Errorf("packaging charts/quotagate: %w", err)
	}
	return path, nil
}
