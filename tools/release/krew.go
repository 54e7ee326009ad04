package release

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// The krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin), as
// krew-index takes it: one platform per archive, selected by os and arch labels.
type (
	KrewPlugin struct {
		APIVersion string       `json:"apiVersion"`
		Kind       string       `json:"kind"`
		Metadata   KrewMetadata `json:"metadata"`
		Spec       KrewSpec     `json:"spec"`
	}
	KrewMetadata struct {
		Name string `json:"name"`
	}
	KrewSpec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Caveats          string         `json:"caveats,omitempty"`
		Platforms        []KrewPlatform `json:"platforms"`
	}
	KrewPlatform struct {
		Selector KrewSelector `json:"selector"`
		URI      string       `json:"uri"`
		SHA256   string       `json:"sha256"`
		Bin      string       `json:"bin"`
	}
	KrewSelector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	}
)

// Homepage is the project's home, the base of the release download URLs.
const Homepage = "https://github.com/quotagate/quotagate"

// DownloadURL is where the GitHub release of version v serves the file name.
func DownloadURL(v, name string) string {
	return fmt.Sprintf("%s/releases/download/%s/%s", Homepage, v, name)
}

// writeKrewManifest writes the krew manifest for version v, whose archives (one per
// platform, in order) have the sha256 values sums.
func writeKrewManifest(path, v string, platforms []Platform, sums []string) error {
	m := KrewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   KrewMetadata{Name: "quotagate"},
		Spec: KrewSpec{
			Version:          v,
			Homepage:         Homepage,
			ShortDescription: "Show quotagate budgets and queues, and why a pod waits",
			Description: "Shows quotagate's Budgets and ClusterBudgets with their usage, the admission\n" +
				"queues in the order the manager will admit pods, why a pod waits and\n" +
				"which pods use a budget; opens and closes budgets.\n",
			Caveats: krewCaveats(v),
		},
	}
	for i, p := range platforms {
		m.Spec.Platforms = append(m.Spec.Platforms, KrewPlatform{
			Selector: KrewSelector{MatchLabels: map[string]string{"os": p.OS, "arch": p.Arch}},
			URI:      DownloadURL(v, PluginArchiveName(p)),
			SHA256:   sums[i],
			Bin:      PluginName,
		})
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// krewCaveats tells how to turn on shell completion: krew puts only the manifest's bin
// on the PATH (kubernetes-sigs/krew#812), so kubectl_complete-quotagate, which the
// archive ships, is copied beside it. Copied, not linked: beside the krew link to the
// plugin, it finds the current version after an upgrade.
func krewCaveats(v string) string {
	return "Shell completion of budgets, pods and namespaces (kubectl 1.26 or later) needs\n" +
		CompletionName + " on your PATH; krew installs only " + PluginName + ". Run:\n" +
		"  cp \"${KREW_ROOT:-$HOME/.krew}/store/quotagate/" + v + "/" + CompletionName + "\" \"${KREW_ROOT:-$HOME/.krew}/bin/\"\n"
}
