package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/quotagate/quotagate/tools/ociimage"
)

// The clusters whose nodes Run can load an archive into, and the command that does it.
const (
	LoadKind = "kind"
	LoadK3d  = "k3d"
)

// Options are `make deploy`'s.
type Options struct {
	// Image is IMG; DefaultTag is its tag when it names none (the version).
	Image, DefaultTag string
	// Insecure pushes over plain HTTP (a registry on localhost or 127.0.0.1 always is).
	Insecure bool
	// Layout is the OCI layout `make image` wrote.
	Layout string
	// Load, if set (LoadKind, LoadK3d), writes Archive instead of pushing and imports it
	// into the nodes of Cluster ("" for the tool's default cluster).
	Load, Archive, Cluster string

	// Chart is the chart's directory (charts/quotagate) or a packaged .tgz.
	Chart              string
	Release, Namespace string
	// ValueFiles and Set are `helm --values` and `--set`; the image values win over them.
	ValueFiles, Set []string
	// Kubeconfig and Context pick the cluster; empty: $KUBECONFIG or ~/.kube/config and
	// its current context, as kubectl.
	Kubeconfig, Context string
	// Wait waits up to Timeout for the Deployments to be available.
	Wait    bool
	Timeout time.Duration
	// Uninstall uninstalls the release instead (the image options are not used).
	Uninstall bool
}

// Run pushes the image (Push) or loads it into the cluster's nodes (WriteArchive, then
// kind or k3d), installs or upgrades the release with the values that run it (Apply),
// and says what it did on out. With o.Uninstall it uninstalls the release instead.
func Run(ctx context.Context, o Options, out io.Writer) error {
	if o.Uninstall {
		cfg, err := o.helmConfig()
		if err != nil {
			return err
		}
		if err := Uninstall(cfg, Release{Name: o.Release, Namespace: o.Namespace, Timeout: o.Timeout}); err != nil {
			return err
		}
		fmt.Fprintf(out, "Uninstalled release %s from namespace %s\n", o.Release, o.Namespace)
		return nil
	}
	if o.Load != "" && o.Load != LoadKind && o.Load != LoadK3d {
		return fmt.Errorf("load %q: want %s or %s (or nothing, to push)", o.Load, LoadKind, LoadK3d)
	}
	var nameOpts []name.Option
	if o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	img, err := ParseImage(o.Image, o.DefaultTag, nameOpts...)
	if err != nil {
		return err
	}
	userValues, err := (&values.Options{ValueFiles: o.ValueFiles, Values: o.Set}).MergeValues(nil)
	if err != nil {
		return fmt.Errorf("reading the values: %w", err)
	}
	chrt, err := loader.Load(o.Chart)
	if err != nil {
		return fmt.Errorf("loading the chart %s: %w", o.Chart, err)
	}
	idx, err := LayoutIndex(o.Layout)
	if err != nil {
		return err
	}
	// Before anything is pushed: a kubeconfig that reaches no cluster is the likelier
	// mistake, and the cheaper one to report.
	cfg, err := o.helmConfig()
	if err != nil {
		return err
	}
	pub, err := publish(ctx, o, idx, img, out)
	if err != nil {
		return err
	}
	r := Release{Name: o.Release, Namespace: o.Namespace, Timeout: o.Timeout, Wait: kube.HookOnlyStrategy}
	if o.Wait {
		r.Wait = kube.StatusWatcherStrategy
	}
	fmt.Fprintf(out, "Installing release %s (chart %s %s) in namespace %s with image %s\n",
		o.Release, chrt.Metadata.Name, chrt.Metadata.Version, o.Namespace, pub.Reference())
	rel, err := Apply(ctx, cfg, r, chrt, WithImage(userValues, pub))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Release %s revision %d: %s\n", rel.Name, rel.Version, rel.Info.Status)
	return nil
}

// publish pushes the image, or writes it into an archive and loads that into the
// cluster's nodes.
func publish(ctx context.Context, o Options, idx v1.ImageIndex, img Image, out io.Writer) (Published, error) {
	if o.Load == "" {
		pub, err := Push(idx, img, remote.WithContext(ctx))
		if err != nil {
			return pub, err
		}
		fmt.Fprintf(out, "Pushed %s (%s)\n", img, pub.Digest)
		return pub, nil
	}
	if o.Archive == "" {
		return Published{}, errors.New("loading into " + o.Load + " needs an archive path to write")
	}
	pub, err := WriteArchive(idx, img, o.Archive, createdOf(idx))
	if err != nil {
		return pub, err
	}
	fmt.Fprintf(out, "Wrote %s as %s (%s)\n", o.Archive, img, pub.Digest)
	args := []string{"load", "image-archive", o.Archive}
	if o.Cluster != "" {
		args = append(args, "--name", o.Cluster)
	}
	if o.Load == LoadK3d {
		args = []string{"image", "import", o.Archive}
		if o.Cluster != "" {
			args = append(args, "--cluster", o.Cluster)
		}
	}
	cmd := exec.CommandContext(ctx, o.Load, args...)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	fmt.Fprintf(out, "Running %s\n", cmd)
	if err := cmd.Run(); err != nil {
		return pub, fmt.Errorf("loading the image into the %s cluster (%s is needed on PATH): %w", o.Load, o.Load, err)
	}
	return pub, nil
}

// WithImage is values with the image values of pub over their image key.
func WithImage(vals map[string]any, pub Published) map[string]any {
	out := maps.Clone(vals)
	if out == nil {
		out = map[string]any{}
	}
	img := map[string]any{}
	if user, ok := out["image"].(map[string]any); ok {
		maps.Copy(img, user)
	}
	maps.Copy(img, pub.Values()["image"].(map[string]any))
	out["image"] = img
	return out
}

// createdOf is the index's org.opencontainers.image.created (the commit's time, which
// `make image` stamps), the date of the archive's entries; the zero time without one.
func createdOf(idx v1.ImageIndex) time.Time {
	m, err := idx.IndexManifest()
	if err != nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339, m.Annotations[ociimage.LabelCreated])
	return t
}

// helmConfig is the Helm configuration for the kubeconfig and context of o, checked to
// reach its cluster.
func (o Options) helmConfig() (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(true)
	if o.Kubeconfig != "" {
		flags.KubeConfig = &o.Kubeconfig
	}
	if o.Context != "" {
		flags.Context = &o.Context
	}
	cfg, err := HelmConfig(flags, o.Namespace, slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err != nil {
		return nil, err
	}
	if err := cfg.KubeClient.IsReachable(); err != nil {
		return nil, fmt.Errorf("the cluster of the kubeconfig: %w", err)
	}
	return cfg, nil
}
