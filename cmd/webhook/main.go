// Command webhook is quotagate's admission server: it adds the quotagate
// scheduling gate to new pods in opted-in namespaces. See package app.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/quotagate/quotagate/cmd/webhook/app"
)

func main() {
	if err := app.Run(signals.SetupSignalHandler(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
