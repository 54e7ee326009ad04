// Command kubectl-quotagate is the kubectl plugin for quotagate: it shows budgets, the
// admission queues in order, why a pod waits and who uses a budget, and opens or
// closes budgets.
//
// Installed on the PATH it runs as "kubectl quotagate ...". Its shell completion is
// kubectl_complete-quotagate (cmd/kubectl_complete-quotagate), which runs this
// command's "__complete".
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
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := app.Run(ctx, streams, os.Args[1:])
	stop()
	os.Exit(code)
}
