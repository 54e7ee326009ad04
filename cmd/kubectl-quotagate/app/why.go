package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

func newWhyCommand(e *env) *cobra.Command {
	out := newOutputFlags(false)
	cmd := &cobra.Command{
		Use:   "why POD",
		Short: "Explain why a pod waits, or when and by which budgets it was admitted",
		Long: `Explain a pod: while it is gated, the budgets that hold it, its position in each, the
reason in one sentence (the same sentence as its Waiting event and the snapshot) and,
from the visibility API, when the manager estimates it starts, with the range and what
the estimate rests on (pod ends simulated, finished pods learned from); once
admitted, when and by which budgets; in a namespace not opted in, that quotagate does not
gate it.

-o json|yaml print the explanation as a PodExplanation (cli.quotagate.io/v1alpha1, a
client-side kind that no API serves); the notes are in it instead of on stderr.`,
		Example: `  kubectl quotagate why trainer-0 -n team-a
  kubectl quotagate why team-a/trainer-0 -o yaml
  kubectl quotagate why team-a/trainer-0 -o jsonpath='{.reason.message}'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completePods,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := out.printer()
			if err != nil {
				return err
			}
			ns, err := e.namespace()
			if err != nil {
				return err
			}
			name := args[0]
			if n, p, ok := strings.Cut(name, "/"); ok && !strings.EqualFold(n, "pod") && !strings.EqualFold(n, "pods") {
				ns, name = n, p
			} else if ok {
				name = p
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			res, err := explainPod(cmd.Context(), e, c, client.ObjectKey{Namespace: ns, Name: name})
			if err != nil {
				return err
			}
			if p != nil {
				return p.PrintObj(newPodExplanation(res), e.streams.Out)
			}
			err = renderWhy(e.streams.Out, out, res, e.now())
			writeNotes(e.streams.ErrOut, res.Notes)
			return err
		},
	}
	out.addFlags(cmd, false)
	return cmd
}

// Pod states as why reports them.
const (
	podWaiting             = "Waiting"
	podAdmitted            = "Admitted"
	podNotGated            = "NotGated"
	podNamespaceNotEnabled = "NamespaceNotEnabled"
)

// whyResult is what why knows about a pod; -o json prints it as is.
type whyResult struct {
	Pod   quota.PodRef `json:"pod"`
	State string       `json:"state"`
	// Summary is the first line of the text output.
	Summary string        `json:"summary"`
	Reason  *quota.Reason `json:"reason,omitempty"`
	// Budgets are the pod's places in the queues of the budgets that hold it.
	Budgets    []podPlace `json:"budgets,omitempty"`
	Created    time.Time  `json:"created"`
	AdmittedAt *time.Time `json:"admittedAt,omitempty"`
	AdmittedBy []string   `json:"admittedBy,omitempty"`
	// Flavor is the Flavor it was admitted on, if any.
	Flavor string `json:"flavor,omitempty"`
	// Borrowing are the budgets it was admitted beyond the hard of
	// (quotagate.io/borrowing): what lent it may take it back.
	Borrowing []string `json:"borrowing,omitempty"`
	// EstimatedStart is the manager's estimate of when the pod starts (visibility API
	// only: the snapshot carries none).
	EstimatedStart *visv1.EstimatedStart `json:"estimatedStart,omitempty"`
	// EstimateRecord is how estimates fared in the pod's first budget (visibility API
	// only).
	EstimateRecord *visv1.EstimateRecord `json:"estimateRecord,omitempty"`
	// Windows say what the windows of the budgets that hold it do next
	// (windowNotes), one line per budget that has any.
	Windows []string `json:"windows,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

func explainPod(ctx context.Context, e *env, c client.Client, key client.ObjectKey) (*whyResult, error) {
	var pod corev1.Pod
	if err := c.Get(ctx, key, &pod); err != nil {
		return nil, fmt.Errorf("reading pod %s: %w", key, err)
	}
	now := e.now()
	res := &whyResult{Pod: quota.PodRef{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name}, Created: pod.CreationTimestamp.Time}
	gated := gates.HasGate(&pod, v1alpha1.SchedulingGate)

	var ns corev1.Namespace
	nsErr := c.Get(ctx, client.ObjectKey{Name: pod.Namespace}, &ns)
	switch {
	case nsErr == nil && ns.Labels[v1alpha1.EnabledLabel] != "true" && !gated:
		res.State = podNamespaceNotEnabled
		res.Summary = fmt.Sprintf("Pod %s is not gated by quotagate: namespace %s is not opted in (label %s=true); budgets that cover it still count it as used",
			res.Pod, pod.Namespace, v1alpha1.EnabledLabel)
		return res, nil
	case nsErr != nil && !apierrors.IsForbidden(nsErr) && !apierrors.IsNotFound(nsErr):
		return nil, fmt.Errorf("reading namespace %s: %w", pod.Namespace, nsErr)
	}

	if !gated {
		return explainUngated(res, &pod, now), nil
	}
	res.State = podWaiting
	res.Summary = fmt.Sprintf("Pod %s is waiting for %s (gate %s)", res.Pod, age(now, res.Created), v1alpha1.SchedulingGate)
	if nsErr == nil && ns.Labels[v1alpha1.EnabledLabel] != "true" {
		res.Notes = append(res.Notes, fmt.Sprintf("namespace %s is no longer opted in: the manager releases its gated pods", pod.Namespace))
	}
	read, err := e.podStatusReader()
	if err != nil {
		return nil, err
	}
	if read != nil {
		explainFromVisibility(ctx, read, &pod, res)
		res.Windows = windowNotes(ctx, c, res.Budgets, now)
		return res, nil
	}
	snap, note, err := e.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if snap == nil {
		if note != "" {
			res.Notes = append(res.Notes, note)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("the latest reason is in the pod's events: kubectl events -n %s --for pod/%s", pod.Namespace, pod.Name))
		return res, nil
	}
	res.EstimatedStart = snap.starts[pod.UID]
	places := snap.byPod[pod.UID]
	switch {
	case len(places) > 0:
		r := places[0].entry.Reason
		res.Reason = &r
		res.Budgets = places
	default:
		if h, ok := snap.held[pod.UID]; ok {
			r := h.Reason
			res.Reason = &r
		} else {
			res.Notes = append(res.Notes, "the manager holds this pod in no queue: it has not seen the pod yet, or is admitting it right now")
		}
	}
	res.Windows = windowNotes(ctx, c, res.Budgets, now)
	return res, nil
}

func explainUngated(res *whyResult, pod *corev1.Pod, now time.Time) *whyResult {
	at, hasAt := pod.Annotations[v1alpha1.AdmittedAtAnnotation]
	by, hasBy := pod.Annotations[v1alpha1.AdmittedByAnnotation]
	if !hasAt && !hasBy {
		res.State = podNotGated
		res.Summary = fmt.Sprintf("Pod %s was never admitted by quotagate: it was created without the gate (before its namespace opted in, or skipped by the webhook) and counts as used in the budgets that cover it", res.Pod)
		return res
	}
	res.State = podAdmitted
	when := at
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		res.AdmittedAt = &t
		when = fmt.Sprintf("%s (%s ago, after waiting %s)", t.UTC().Format(time.RFC3339), age(now, t), age(t, res.Created))
	}
	byText := "no budget (none covered it)"
	if by != "" {
		res.AdmittedBy = strings.Split(by, ",")
		byText = describeAdmittedByAll(res.AdmittedBy)
	}
	res.Summary = fmt.Sprintf("Pod %s was admitted at %s by %s", res.Pod, when, byText)
	if f := pod.Annotations[v1alpha1.FlavorAnnotation]; f != "" {
		res.Flavor = f
		res.Summary += fmt.Sprintf(", on flavor %s (quotagate added its node labels and tolerations)", f)
	}
	if borrowing := pod.Annotations[v1alpha1.BorrowingAnnotation]; borrowing != "" {
		res.Borrowing = strings.Split(borrowing, ",")
		res.Summary += fmt.Sprintf("; it runs beyond the hard of %s, on quota borrowed under its parent, and may be evicted when a budget that lent it needs it back",
			describeAdmittedByAll(res.Borrowing))
	}
	return res
}

// describeAdmittedByAll describes a list of admitted-by entries, comma-separated.
func describeAdmittedByAll(entries []string) string {
	names := make([]string, len(entries))
	for i, b := range entries {
		names[i] = describeAdmittedBy(b)
	}
	return strings.Join(names, ", ")
}

// describeAdmittedBy turns an admitted-by entry (ns/name or name) into "Budget ns/name"
// or "ClusterBudget name".
func describeAdmittedBy(s string) string {
	if ns, name, ok := strings.Cut(s, "/"); ok {
		return quota.BudgetKey{Namespace: ns, Name: name}.Describe()
	}
	return quota.BudgetKey{Name: s}.Describe()
}

// renderWhy writes the explanation at now: the summary, the reason, the estimated
// start, and the pod's place in each budget that holds it, a table printed by
// cli-runtime's table printer as the other commands' tables are.
func renderWhy(w io.Writer, out *outputFlags, r *whyResult, now time.Time) error {
	fmt.Fprintln(w, r.Summary)
	if r.Reason != nil {
		fmt.Fprintf(w, "Reason: %s\n", r.Reason.Message)
	}
	if line := EstimateLine(r.EstimatedStart, now); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := recordLine(r.EstimateRecord); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, line := range r.Windows {
		fmt.Fprintf(w, "Window: %s\n", line)
	}
	if len(r.Budgets) == 0 {
		return nil
	}
	rows := make([]metav1.TableRow, 0, len(r.Budgets))
	for _, p := range r.Budgets {
		rows = append(rows, tableRow(p.Budget.Describe(), fmt.Sprintf("%d of %d", p.Position, p.Of), string(p.Queue)))
	}
	return out.printTable(w, whyColumns, rows)
}

// whyColumns are the columns of why's table of places.
var whyColumns = []metav1.TableColumnDefinition{column("Budget", false), column("Position", false), column("Queue", false)}
