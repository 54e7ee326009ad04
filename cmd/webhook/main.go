// Command webhook is quotagate's admission server: it adds the quotagate
// scheduling gate to new pods in opted-in namespaces. See package app.
package main

import (
	"os"

	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/quotagate/quotagate/cmd/webhook/app"
)

func main() {
	if err := app.NewCommand().ExecuteContext(signals.SetupSignalHandler()); err != nil {
		os.Exit(1) // cobra has printed it
	}
}
