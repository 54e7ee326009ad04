package localinstall

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/quotagate/quotagate/tools/deploy"
)

// helmConfig is an action configuration that talks to the cluster as the
// administrator, the way `helm --kubeconfig <admin> -n <namespace>` would, storing
// releases in Secrets (Helm's default) and logging to <dir>/helm.log: `make deploy`'s
// (deploy.HelmConfig).
func helmConfig(kubeconfig, namespace, dir string) (*action.Configuration, *os.File, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, "helm.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("opening helm log: %w", err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	cacheDir := filepath.Join(dir, "kube-cache")
	flags.CacheDir = &cacheDir
	cfg, err := deploy.HelmConfig(flags, namespace, slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err != nil {
		_ = logFile.Close()
		return nil, nil, err
	}
	return cfg, logFile, nil
}

// helmApply is `helm upgrade --install <release> <chartPath> -n <ns> --create-namespace`
// with values and the local post-renderer, through deploy.Apply as `make deploy`
// installs: Install's first install and Upgrade's upgrades.
func (i *Installation) helmApply(ctx context.Context, chartPath string, values map[string]any) (*release.Release, error) {
	chrt, err := loadPackagedChart(chartPath)
	if err != nil {
		return nil, err
	}
	return deploy.Apply(ctx, i.helm, deploy.Release{
		Name: i.opts.Release, Namespace: i.opts.Namespace,
		Wait: kube.HookOnlyStrategy, Timeout: i.opts.Timeout, PostRenderer: i.renderer,
	}, chrt, values)
}

// helmUninstall is `helm uninstall <release> -n <ns>` through deploy.Uninstall, as `make
// undeploy` runs it: Helm runs the pre-delete hook and waits for its Job (up to the
// timeout) before deleting the release's objects.
func (i *Installation) helmUninstall() error {
	return deploy.Uninstall(i.helm, deploy.Release{Name: i.opts.Release, Namespace: i.opts.Namespace, Timeout: i.opts.Timeout})
}

func asRelease(r ri.Releaser) (*release.Release, error) {
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("unexpected release type %T", r)
	}
	return rel, nil
}

// releaseObjects decodes the objects of a release's manifest (hooks apart).
func releaseObjects(rel *release.Release) ([]*unstructured.Unstructured, error) {
	objs, err := decodeObjects([]byte(rel.Manifest))
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", rel.Name, err)
	}
	for _, o := range objs {
		if o.GetNamespace() == "" && !clusterScoped(o.GetKind()) {
			o.SetNamespace(rel.Namespace)
		}
	}
	return objs, nil
}

func clusterScoped(kind string) bool {
	return strings.HasPrefix(kind, "Cluster") || kind == "CustomResourceDefinition" ||
		strings.HasSuffix(kind, "WebhookConfiguration") || strings.HasPrefix(kind, "ValidatingAdmissionPolicy") || strings.HasPrefix(kind, "MutatingAdmissionPolicy")
}
