// Command manager is quotagate's quota controller: it watches Budgets, ClusterBudgets,
// namespaces and pods, and removes the scheduling gate from pods whose budgets have room.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/quotagate/quotagate/cmd/manager/app"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	if err := app.NewCommand().ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}
