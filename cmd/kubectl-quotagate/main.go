// Command kubectl-quotagate is the kubectl plugin for quotagate: it shows budgets, the
// admission queues in order and why a pod waits, and opens or closes budgets.
//
// Installed on the PATH it runs as "kubectl quotagate ...".
package main

import (
	"context"
	"os"
	"os/signal"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/quotagate/quotagate/cmd/kubectl-quotagate/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := app.NewCommand(streams).ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}
