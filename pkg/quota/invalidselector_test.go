package quota

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Selectors that do not parse reach the manager only past an older CRD (or through label
// syntax CEL cannot afford to check). They must fail closed: the budget holds every pod it
// might have meant, admits none, and says why.

func expr(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func exprs(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: reqs}
}

// TestBrokenSelectorIsWidened: the selector a broken namespaceSelector is replaced by,
// and the error that names it.
func TestBrokenSelectorIsWidened(t *testing.T) {
	tests := map[string]struct {
		sel *metav1.LabelSelector
		// want is the widened selector's String(); "" is every namespace.
		want    string
		wantErr string
		// meant are selectors the author could have meant (same keys and operators,
		// valid values): whatever they match, the widened selector must match too.
		meant []*metav1.LabelSelector
	}{
		"In without values needs the key": {
			sel:     exprs(expr("team", metav1.LabelSelectorOpIn)),
			want:    "team",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; until it is fixed the budget covers the namespaces matching \"team\", and admits nothing",
			meant:   []*metav1.LabelSelector{exprs(expr("team", metav1.LabelSelectorOpIn, "a")), exprs(expr("team", metav1.LabelSelectorOpIn, "a", "b"))},
		},
		"In with an invalid value needs the key": {
			sel:     exprs(expr("team", metav1.LabelSelectorOpIn, "a b")),
			want:    "team",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values[0]: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'); until it is fixed the budget covers the namespaces matching \"team\", and admits nothing",
			meant:   []*metav1.LabelSelector{exprs(expr("team", metav1.LabelSelectorOpIn, "a")), exprs(expr("team", metav1.LabelSelectorOpIn, "b"))},
		},
		"NotIn without values matches namespaces without the key too": {
			sel:     exprs(expr("team", metav1.LabelSelectorOpNotIn)),
			want:    "",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; until it is fixed the budget covers every namespace, and admits nothing",
			meant:   []*metav1.LabelSelector{exprs(expr("team", metav1.LabelSelectorOpNotIn, "a")), exprs(expr("team", metav1.LabelSelectorOpNotIn, "b"))},
		},
		"Exists with values keeps Exists": {
			sel:     exprs(expr("team", metav1.LabelSelectorOpExists, "a")),
			want:    "team",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'; until it is fixed the budget covers the namespaces matching \"team\", and admits nothing",
			meant:   []*metav1.LabelSelector{exprs(expr("team", metav1.LabelSelectorOpExists))},
		},
		"DoesNotExist with values keeps DoesNotExist": {
			sel:     exprs(expr("team", metav1.LabelSelectorOpDoesNotExist, "a")),
			want:    "!team",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'; until it is fixed the budget covers the namespaces matching \"!team\", and admits nothing",
			meant:   []*metav1.LabelSelector{exprs(expr("team", metav1.LabelSelectorOpDoesNotExist))},
		},
		"an unknown operator is dropped": {
			sel:     exprs(expr("team", "Equals", "a")),
			want:    "",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector operator; until it is fixed the budget covers every namespace, and admits nothing",
			meant: []*metav1.LabelSelector{
				exprs(expr("team", metav1.LabelSelectorOpIn, "a")), exprs(expr("team", metav1.LabelSelectorOpNotIn, "a")),
				exprs(expr("team", metav1.LabelSelectorOpDoesNotExist)),
			},
		},
		"an invalid key is dropped": {
			sel:     exprs(expr("my team", metav1.LabelSelectorOpIn, "a")),
			want:    "",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].key: Invalid value: \"my team\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'); until it is fixed the budget covers every namespace, and admits nothing",
			meant:   []*metav1.LabelSelector{exprs(expr("my-team", metav1.LabelSelectorOpIn, "a")), exprs(expr("team", metav1.LabelSelectorOpIn, "a"))},
		},
		"a matchLabels value that is not a label value needs the key": {
			sel:     &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a/b"}},
			want:    "team",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchLabels: Invalid value: \"a/b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'); until it is fixed the budget covers the namespaces matching \"team\", and admits nothing",
			meant:   []*metav1.LabelSelector{{MatchLabels: map[string]string{"team": "a"}}, {MatchLabels: map[string]string{"team": "b"}}},
		},
		"the requirements that parse are kept": {
			sel: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"tier": "gold"},
				MatchExpressions: []metav1.LabelSelectorRequirement{expr("team", metav1.LabelSelectorOpIn), expr("zone", metav1.LabelSelectorOpNotIn, "x")},
			},
			want:    "team,tier=gold,zone notin (x)",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; until it is fixed the budget covers the namespaces matching \"team,tier=gold,zone notin (x)\", and admits nothing",
			meant: []*metav1.LabelSelector{{
				MatchLabels:      map[string]string{"tier": "gold"},
				MatchExpressions: []metav1.LabelSelectorRequirement{expr("team", metav1.LabelSelectorOpIn, "a"), expr("zone", metav1.LabelSelectorOpNotIn, "x")},
			}},
		},
		"every problem is listed": {
			sel:     exprs(expr("team", metav1.LabelSelectorOpIn), expr("zone", "Bogus")),
			want:    "team",
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; namespaceSelector.matchExpressions[1].operator: Invalid value: \"Bogus\": not a valid selector operator; until it is fixed the budget covers the namespaces matching \"team\", and admits nothing",
			meant:   []*metav1.LabelSelector{exprs(expr("team", metav1.LabelSelectorOpIn, "a"), expr("zone", metav1.LabelSelectorOpIn, "z"))},
		},
	}
	// Namespaces with and without the keys the cases name.
	namespaces := []labels.Set{
		{}, {"team": "a"}, {"team": "b"}, {"team": "c"}, {"my-team": "a"}, {"zone": "x"}, {"zone": "z"},
		{"team": "a", "tier": "gold"}, {"team": "a", "tier": "gold", "zone": "x"}, {"team": "a", "tier": "gold", "zone": "z"},
		{"team": "a", "zone": "z"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cb := &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "cb"}}
			cb.Spec.NamespaceSelector = tc.sel
			got := ClusterBudgetFromAPI(cb)
			if got.NamespaceSelector == nil {
				t.Fatalf("namespaceSelector widened to nil (covers nothing), want %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, got.NamespaceSelector.String()); diff != "" {
				t.Errorf("widened selector (-want +got):\n%s", diff)
			}
			if got.SpecError == nil {
				t.Fatalf("no SpecError for %v", tc.sel)
			}
			if diff := cmp.Diff(tc.wantErr, got.SpecError.Error()); diff != "" {
				t.Errorf("SpecError (-want +got):\n%s", diff)
			}
			for _, m := range tc.meant {
				meant, err := metav1.LabelSelectorAsSelector(m)
				if err != nil {
					t.Fatalf("meant selector %v: %v", m, err)
				}
				for _, ns := range namespaces {
					if meant.Matches(ns) && !got.NamespaceSelector.Matches(ns) {
						t.Errorf("namespace %v matches %q, which the author could have meant, but not the widened %q", ns, meant, got.NamespaceSelector)
					}
				}
			}
		})
	}
}

// TestValidSelectorsAreUnchanged: selectors that parse are used as written, with no error.
func TestValidSelectorsAreUnchanged(t *testing.T) {
	for name, sel := range map[string]*metav1.LabelSelector{
		"unset":       nil,
		"empty":       {},
		"matchLabels": {MatchLabels: map[string]string{"team": "a"}},
		"every operator": exprs(expr("a", metav1.LabelSelectorOpIn, "x"), expr("b", metav1.LabelSelectorOpNotIn, "y"),
			expr("c", metav1.LabelSelectorOpExists), expr("d", metav1.LabelSelectorOpDoesNotExist)),
	} {
		t.Run(name, func(t *testing.T) {
			cb := &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "cb"}}
			cb.Spec.NamespaceSelector = sel
			b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "b"}}
			b.Spec.PodSelector = sel
			for kind, got := range map[string]Budget{"ClusterBudget": ClusterBudgetFromAPI(cb), "Budget": BudgetFromAPI(b)} {
				if got.SpecError != nil {
					t.Errorf("%s: SpecError %v", kind, got.SpecError)
				}
				gotSel := got.NamespaceSelector
				if kind == "Budget" {
					gotSel = got.PodSelector
				}
				if sel == nil {
					if gotSel != nil {
						t.Errorf("%s: unset selector became %q", kind, gotSel)
					}
					continue
				}
				want, _ := metav1.LabelSelectorAsSelector(sel)
				if gotSel == nil || gotSel.String() != want.String() {
					t.Errorf("%s: selector %v, want %q", kind, gotSel, want)
				}
			}
		})
	}
}

// TestBrokenSelectorHoldsWhatItMightCover: a budget whose selector does not parse admits
// nothing, holds the pods it might cover with a wait reason that names it, reports
// InvalidSelector, and lets the pods it cannot cover through; fixed, it admits.
func TestBrokenSelectorHoldsWhatItMightCover(t *testing.T) {
	inTeamNoValues := exprs(expr("team", metav1.LabelSelectorOpIn))
	tests := map[string]struct {
		budgets []Budget
		// broken is the budget whose selector does not parse.
		broken  BudgetKey
		fixed   Budget
		wantErr string
		// wantWait is the held pods' wait message; they are in namespace team-a.
		wantWait string
	}{
		"Budget podSelector: the pods of its namespace with the key": {
			budgets: []Budget{budgetFromAPI("team-a", "b", "cpu=10", exprs(expr("app", metav1.LabelSelectorOpIn)))},
			broken:  BudgetKey{Namespace: "team-a", Name: "b"},
			fixed:   budgetFromAPI("team-a", "b", "cpu=10", exprs(expr("app", metav1.LabelSelectorOpIn, "web"))),
			wantErr: "invalid podSelector: podSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; until it is fixed the budget covers the pods of its namespace matching \"app\", and admits nothing",
			wantWait: "Budget team-a/b cannot admit pods: invalid podSelector: podSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; " +
				"until it is fixed the budget covers the pods of its namespace matching \"app\", and admits nothing",
		},
		"ClusterBudget namespaceSelector: the namespaces with the key": {
			budgets: []Budget{clusterBudgetFromAPI("cb", "cpu=10", inTeamNoValues, nil)},
			broken:  BudgetKey{Name: "cb"},
			fixed:   clusterBudgetFromAPI("cb", "cpu=10", exprs(expr("team", metav1.LabelSelectorOpIn, "a")), nil),
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; until it is fixed the budget covers the namespaces matching \"team\", and admits nothing",
			wantWait: "ClusterBudget cb cannot admit pods: invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; " +
				"until it is fixed the budget covers the namespaces matching \"team\", and admits nothing",
		},
		"ClusterBudget podSelector: the pods with the key in the namespaces it selects": {
			budgets: []Budget{clusterBudgetFromAPI("cb", "cpu=10", exprs(expr("team", metav1.LabelSelectorOpExists)), exprs(expr("app", metav1.LabelSelectorOpIn)))},
			broken:  BudgetKey{Name: "cb"},
			fixed:   clusterBudgetFromAPI("cb", "cpu=10", exprs(expr("team", metav1.LabelSelectorOpExists)), exprs(expr("app", metav1.LabelSelectorOpIn, "web"))),
			wantErr: "invalid podSelector: podSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; until it is fixed the budget covers the pods matching \"app\" in the namespaces it selects, and admits nothing",
			wantWait: "ClusterBudget cb cannot admit pods: invalid podSelector: podSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; " +
				"until it is fixed the budget covers the pods matching \"app\" in the namespaces it selects, and admits nothing",
		},
		"parent of a Budget: the child's pods wait, naming the parent": {
			budgets: []Budget{
				clusterBudgetFromAPI("cb", "cpu=10", inTeamNoValues, nil),
				makeBudget("team-a", "child").Hard("cpu=10").Parent("cb").Obj(),
			},
			broken:  BudgetKey{Name: "cb"},
			fixed:   clusterBudgetFromAPI("cb", "cpu=10", exprs(expr("team", metav1.LabelSelectorOpIn, "a")), nil),
			wantErr: "invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; until it is fixed the budget covers the namespaces matching \"team\", and admits nothing",
			// The child Budget sorts first among the pod's budgets and is closed by
			// its parent; the sentence names the broken parent.
			wantWait: "ClusterBudget cb cannot admit pods: invalid namespaceSelector: namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'; " +
				"until it is fixed the budget covers the namespaces matching \"team\", and admits nothing (parent of Budget team-a/child)",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Uncovered pods are admitted at once, so that free shows it is not held.
			q, _ := newTestQueue(WithHoldUncovered(false))
			q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true", "team": "a"})
			q.SetNamespace("team-b", map[string]string{v1alpha1.EnabledLabel: "true"})
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			// held: what the broken budget might cover. free: a pod in a namespace
			// without the key and without the pod label, which no budget can cover.
			q.UpsertPod(makePod("held").Created(1).Label("app", "web").Req("cpu=1").Pod())
			q.UpsertPod(makePod("free").NS("team-b").Created(2).Req("cpu=1").Pod())
			if diff := cmp.Diff([]string{"free"}, admitNames(q)); diff != "" {
				t.Fatalf("admitted (-want +got):\n%s", diff)
			}
			st := mustStatus(t, q, tc.broken)
			if diff := cmp.Diff(&Problem{Reason: v1alpha1.ReasonInvalidSelector, Message: tc.wantErr}, st.Problem); diff != "" {
				t.Errorf("problem (-want +got):\n%s", diff)
			}
			if st.State != v1alpha1.StateClosed || st.StateReason != v1alpha1.ReasonInvalidSelector {
				t.Errorf("state %s (%s), want Closed (InvalidSelector)", st.State, st.StateReason)
			}
			r, ok := q.Reader().WaitReason("held")
			if !ok {
				t.Fatal("held pod is not waiting")
			}
			if diff := cmp.Diff(Reason{Code: CodeBudgetClosed, Message: tc.wantWait}, r); diff != "" {
				t.Errorf("wait reason (-want +got):\n%s", diff)
			}

			q.UpsertBudget(tc.fixed)
			if diff := cmp.Diff([]string{"held"}, admitNames(q)); diff != "" {
				t.Errorf("admitted once fixed (-want +got):\n%s", diff)
			}
			if st := mustStatus(t, q, tc.broken); st.Problem != nil || st.State != v1alpha1.StateOpen {
				t.Errorf("once fixed: state %s, problem %+v; want Open and none", st.State, st.Problem)
			}
		})
	}
}

// TestBrokenSelectorWithoutKeysHoldsEverything: a namespaceSelector with no usable
// requirement holds the pods of every namespace, and charges the pods already running
// there, so that fixing it cannot over-admit.
func TestBrokenSelectorWithoutKeysHoldsEverything(t *testing.T) {
	q, _ := newTestQueue(WithHoldUncovered(false))
	q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	q.SetNamespace("team-b", map[string]string{v1alpha1.EnabledLabel: "true"})
	q.UpsertPod(makePod("running").NS("team-b").Req("cpu=1").Ungated().Pod())
	q.UpsertBudget(clusterBudgetFromAPI("cb", "cpu=1", exprs(expr("team", "Equals", "a")), nil))
	q.UpsertPod(makePod("a").Created(1).Req("cpu=1").Pod())
	q.UpsertPod(makePod("b").NS("team-b").Created(2).Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v through a ClusterBudget whose selector does not parse", got)
	}
	st := mustStatus(t, q, BudgetKey{Name: "cb"})
	if st.GatedPods != 2 || st.AdmittedPods != 1 {
		t.Errorf("gated %d, admitted %d; want 2 and 1 (every namespace)", st.GatedPods, st.AdmittedPods)
	}
	// Fixed to cover only team-a: the pod running in team-b no longer counts, and a
	// waits for it no more.
	q.UpsertBudget(clusterBudgetFromAPI("cb", "cpu=1", exprs(expr("kubernetes.io/metadata.name", metav1.LabelSelectorOpDoesNotExist)), nil))
	q.SetNamespace("team-b", map[string]string{v1alpha1.EnabledLabel: "true", "kubernetes.io/metadata.name": "team-b"})
	got := admitNames(q)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("admitted once fixed (-want +got):\n%s", diff)
	}
}

func budgetFromAPI(ns, name, hard string, podSelector *metav1.LabelSelector) Budget {
	b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	b.Spec.Hard = parseList(hard)
	b.Spec.PodSelector = podSelector
	return BudgetFromAPI(b)
}

func clusterBudgetFromAPI(name, hard string, nsSelector, podSelector *metav1.LabelSelector) Budget {
	cb := &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cb.Spec.Hard = parseList(hard)
	cb.Spec.NamespaceSelector = nsSelector
	cb.Spec.PodSelector = podSelector
	return ClusterBudgetFromAPI(cb)
}
