package deploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/postrenderer"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// HelmConfig is a Helm action configuration for the cluster and namespace flags name
// (kubeconfig, context; unset: $KUBECONFIG or ~/.kube/config and its current
// context), storing releases in Secrets as the helm CLI does, logging to log.
func HelmConfig(flags *genericclioptions.ConfigFlags, namespace string, log slog.Handler) (*action.Configuration, error) {
	flags.Namespace = &namespace
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(log))
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		return nil, fmt.Errorf("initialising helm: %w", err)
	}
	return cfg, nil
}

// Release says which release Apply installs or upgrades, and how.
type Release struct {
	Name, Namespace string
	// Wait is Helm's wait strategy: kube.StatusWatcherStrategy waits for the Deployments
	// to be available (`--wait`), kube.HookOnlyStrategy only for hooks. Empty: hooks only.
	Wait    kube.WaitStrategy
	Timeout time.Duration
	// PostRenderer, if set, edits the rendered manifests (`--post-renderer`).
	PostRenderer postrenderer.PostRenderer
}

// Apply is `helm upgrade --install <name> <chart> -n <namespace> --create-namespace`
// with values (only these: the chart's defaults apply to everything they leave out, as
// `helm upgrade` without --reuse-values does).
func Apply(ctx context.Context, cfg *action.Configuration, r Release, chrt *chart.Chart, values map[string]any) (*release.Release, error) {
	if r.Wait == "" {
		r.Wait = kube.HookOnlyStrategy
	}
	if values == nil {
		values = map[string]any{}
	}
	hist := action.NewHistory(cfg)
	hist.Max = 1
	_, err := hist.Run(r.Name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.CreateNamespace = r.Name, r.Namespace, true
		in.WaitStrategy, in.Timeout, in.PostRenderer = r.Wait, r.Timeout, r.PostRenderer
		rel, err := in.RunWithContext(ctx, chrt, values)
		if err != nil {
			return nil, fmt.Errorf("helm install %s: %w", r.Name, err)
		}
		return asRelease(rel)
	case err != nil:
		return nil, fmt.Errorf("reading the history of release %s: %w", r.Name, err)
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = r.Namespace
	up.WaitStrategy, up.Timeout, up.PostRenderer = r.Wait, r.Timeout, r.PostRenderer
	rel, err := up.RunWithContext(ctx, r.Name, chrt, values)
	if err != nil {
		return nil, fmt.Errorf("helm upgrade %s: %w", r.Name, err)
	}
	return asRelease(rel)
}

// Uninstall is `helm uninstall <name> -n <namespace>`: Helm runs the chart's pre-delete
// hook (which releases every gated pod) and waits for it, up to r.Timeout, before it
// deletes the release's objects.
func Uninstall(cfg *action.Configuration, r Release) error {
	un := action.NewUninstall(cfg)
	un.WaitStrategy = kube.HookOnlyStrategy
	un.Timeout = r.Timeout
	un.DeletionPropagation = "background"
	if _, err := un.Run(r.Name); err != nil {
		return fmt.Errorf("helm uninstall %s: %w", r.Name, err)
	}
	return nil
}

func asRelease(r ri.Releaser) (*release.Release, error) {
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("unexpected release type %T", r)
	}
	return rel, nil
}
