package deploy

import (
	"flag"
	"strings"
	"time"
)

// repeated is a flag that may be given several times.
type repeated struct{ list *[]string }

func (r repeated) String() string {
	if r.list == nil {
		return ""
	}
	return strings.Join(*r.list, ",")
}

func (r repeated) Set(v string) error { *r.list = append(*r.list, v); return nil }

// AddFlags declares the flags of `go run ./hack/deploy` (`make deploy`'s DEPLOY_FLAGS)
// on fs, each setting a field of o. The docs' tests read the same set.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Image, "image", "", "The image to push and run: registry/repository[:tag] (IMG).")
	fs.StringVar(&o.DefaultTag, "default-tag", "", "The tag when --image names none (the version).")
	fs.BoolVar(&o.Insecure, "insecure", false, "Push over plain HTTP (a registry on localhost or 127.0.0.1 always is).")
	fs.StringVar(&o.Layout, "layout", "_output/image/oci", "The OCI layout `make image` wrote.")
	fs.StringVar(&o.Load, "load", "", "kind or k3d: load the image into that cluster's nodes from --archive instead of pushing it.")
	fs.StringVar(&o.Archive, "archive", "_output/image/deploy.oci.tar", "With --load: the archive to write, its image named --image.")
	fs.StringVar(&o.Cluster, "cluster", "", "With --load: the kind or k3d cluster's name; empty: the tool's default.")
	fs.StringVar(&o.Chart, "chart", "charts/quotagate", "The chart: a directory or a packaged .tgz.")
	fs.StringVar(&o.Release, "release", "quotagate", "The Helm release's name.")
	fs.StringVar(&o.Namespace, "namespace", "quotagate-system", "The release's namespace (created if missing).")
	fs.Var(repeated{&o.ValueFiles}, "values", "A values file, as helm --values (repeatable).")
	fs.Var(repeated{&o.Set}, "set", "A value, as helm --set key=value (repeatable).")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "The kubeconfig; empty: $KUBECONFIG or ~/.kube/config.")
	fs.StringVar(&o.Context, "context", "", "The kubeconfig context; empty: its current context.")
	fs.BoolVar(&o.Wait, "wait", true, "Wait for the Deployments to be available.")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long Helm may take, waiting included.")
	fs.BoolVar(&o.Uninstall, "uninstall", false, "Uninstall the release instead (helm uninstall: the pre-delete hook releases every gated pod first).")
}
