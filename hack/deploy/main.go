// Command deploy is `make deploy IMG=registry/repository:tag`: it pushes the image `make
// image` wrote to IMG (or, with --load kind|k3d, loads it into the cluster's nodes) and
// installs or upgrades the chart pointing at it, on the cluster of the current kubeconfig
// (tools/deploy).
//
//	go run ./hack/deploy --image registry.example/quotagate:dev --layout _output/image/oci
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/quotagate/quotagate/tools/deploy"
)

func main() {
	var o deploy.Options
	o.AddFlags(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "deploy: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := deploy.Run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
}
