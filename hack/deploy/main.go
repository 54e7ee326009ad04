// Command deploy is `make deploy IMG=registry/repository:tag`: it pushes the image `make
// image` wrote to IMG (or, with --load kind|k3d, loads it into the cluster's nodes) and
// installs or upgrades the chart pointing at it, on the cluster of the current kubeconfig
// (internal/deploy).
//
//	go run ./hack/deploy --image registry.example/quotagate:dev --layout _output/image/oci
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/quotagate/quotagate/internal/deploy"
)

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	var o deploy.Options
	var valueFiles, set repeated
	flag.StringVar(&o.Image, "image", "", "The image to push and run: registry/repository[:tag] (IMG).")
	flag.StringVar(&o.DefaultTag, "default-tag", "", "The tag when --image names none (the version).")
	flag.BoolVar(&o.Insecure, "insecure", false, "Push over plain HTTP (a registry on localhost or 127.0.0.1 always is).")
	flag.StringVar(&o.Layout, "layout", "_output/image/oci", "The OCI layout `make image` wrote.")
	flag.StringVar(&o.Load, "load", "", "kind or k3d: load the image into that cluster's nodes from --archive instead of pushing it.")
	flag.StringVar(&o.Archive, "archive", "_output/image/deploy.oci.tar", "With --load: the archive to write, its image named --image.")
	flag.StringVar(&o.Cluster, "cluster", "", "With --load: the kind or k3d cluster's name; empty: the tool's default.")
	flag.StringVar(&o.Chart, "chart", "charts/quotagate", "The chart: a directory or a packaged .tgz.")
	flag.StringVar(&o.Release, "release", "quotagate", "The Helm release's name.")
	flag.StringVar(&o.Namespace, "namespace", "quotagate-system", "The release's namespace (created if missing).")
	flag.Var(&valueFiles, "values", "A values file, as helm --values (repeatable).")
	flag.Var(&set, "set", "A value, as helm --set key=value (repeatable).")
	flag.StringVar(&o.Kubeconfig, "kubeconfig", "", "The kubeconfig; empty: $KUBECONFIG or ~/.kube/config.")
	flag.StringVar(&o.Context, "context", "", "The kubeconfig context; empty: its current context.")
	flag.BoolVar(&o.Wait, "wait", true, "Wait for the Deployments to be available.")
	flag.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long Helm may take, waiting included.")
	flag.BoolVar(&o.Uninstall, "uninstall", false, "Uninstall the release instead (helm uninstall: the pre-delete hook releases every gated pod first).")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "deploy: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	o.ValueFiles, o.Set = valueFiles, set
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := deploy.Run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
}
