package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/kubernetes"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// queueHeadRows is how many pods of the queue the demo prints.
const queueHeadRows = 5

// printQueueHead prints the first pods of the demo Budget's queue as the visibility
// API (through kube-apiserver) gives them: what `kubectl quotagate queue` shows.
func printQueueHead(ctx context.Context, cs kubernetes.Interface) error {
	path := "/apis/visibility.quotagate.io/v1alpha1/namespaces/" + demoNamespace + "/budgets/" + budgetName + "/pendingpods"
	raw, err := cs.Discovery().RESTClient().Get().AbsPath(path).Param("limit", fmt.Sprint(queueHeadRows)).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("reading the queue from the visibility API (%s): %w", path, err)
	}
	var l visv1.PendingPodList
	if err := json.Unmarshal(raw, &l); err != nil {
		return fmt.Errorf("decoding the queue: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe queue now, from the visibility API (kubectl get --raw %s?limit=%d; `kubectl quotagate queue %s -n %s` prints the same):\n", path, queueHeadRows, budgetName, demoNamespace)
	w := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "  POSITION\tPOD\tPRIORITY\tQUEUE\tREASON")
	for _, p := range l.Items {
		fmt.Fprintf(w, "  %d\t%s\t%d\t%s\t%s\n", p.Position, p.Name, p.Priority, p.Queue, p.Reason)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if rest := l.Total - int64(len(l.Items)); rest > 0 {
		fmt.Fprintf(&b, "  ... and %d more\n", rest)
	}
	fmt.Println(b.String())
	return nil
}
