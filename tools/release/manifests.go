package release

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ImageRepository is where the release's image is pushed; install.yaml and the chart
// name it with the release's version as the tag.
const ImageRepository = "ghcr.io/quotagate/quotagate"

// writeCRDs joins config/crd/bases/*.yaml, in name order, into one multi-document file.
func writeCRDs(repoRoot, path string) error {
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", filepath.Join(repoRoot, "config", "crd", "bases"))
	}
	var out bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading CRD: %w", err)
		}
		doc := strings.TrimPrefix(strings.TrimSpace(string(b)), "---\n")
		out.WriteString("---\n" + doc + "\n")
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// writeInstall renders config/default with kustomize, as `kubectl kustomize` does, and
// sets the image to ImageRepository:<version> with kustomize's image transformer (a
// second, in-memory kustomization over the first render), so config/ stays untouched.
func writeInstall(repoRoot, version, path string) error {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	base, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, "config", "default"))
	if err != nil {
		return fmt.Errorf("kustomize build config/default: %w", err)
	}
	rendered, err := base.AsYaml()
	if err != nil {
		return fmt.Errorf("encoding config/default: %w", err)
	}

	fs := filesys.MakeFsInMemory()
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - default.yaml
images:
  - name: %s
    newTag: %s
`, ImageRepository, version)
	if err := fs.WriteFile("/release/kustomization.yaml", []byte(kustomization)); err != nil {
		return err
	}
	if err := fs.WriteFile("/release/default.yaml", rendered); err != nil {
		return err
	}
	withImage, err := k.Run(fs, "/release")
	if err != nil {
		return fmt.Errorf("setting the image to %s:%s: %w", ImageRepository, version, err)
	}
	out, err := withImage.AsYaml()
	if err != nil {
		return fmt.Errorf("encoding install.yaml: %w", err)
	}
	header := fmt.Sprintf("# quotagate %s: kubectl apply -f install.yaml (cert-manager must be installed).\n# Rendered from config/default with the image %s:%s.\n", version, ImageRepository, version)
	return os.WriteFile(path, append([]byte(header), out...), 0o644)
}
