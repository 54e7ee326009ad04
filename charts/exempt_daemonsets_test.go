package charts_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// exemptCondition is the matchCondition that lists the exempt DaemonSets; config/ writes
// the list empty ([]), and pkg/admission's tests put each case's list in its place.
const exemptCondition = "not-exempt-daemonset-pod-from-its-controller"

// admission.exemptDaemonSets changes one thing in the admission step of either mode: the
// CEL list of exempt DaemonSets in the matchConditions (the webhook's, the gate policy's and
// the bound-pod guard's), and, in mode webhook, the webhook's --exempt-daemonsets flag. The
// default exempts nothing, in the chart as in config/.
func TestExemptDaemonSets(t *testing.T) {
	exempt := []any{"monitoring/node-exporter", "team-a/log-agent.v2"}
	values := func(mode string, exempt []any) map[string]any {
		admission := map[string]any{"mode": mode}
		if exempt != nil {
			admission["exemptDaemonSets"] = exempt
		}
		return map[string]any{"admission": admission}
	}
	wantList := "['monitoring/node-exporter', 'team-a/log-agent.v2']"

	t.Run("webhook", func(t *testing.T) {
		plain := webhookOf(t, mustInstall(t, defaultRelease, defaultNamespace, values("webhook", nil)))
		m := mustInstall(t, defaultRelease, defaultNamespace, values("webhook", exempt))
		got := webhookOf(t, m)
		if list := exemptList(t, plain.MatchConditions); list != "[]" {
			t.Errorf("the default exempts %s, want []", list)
		}
		if list := exemptList(t, got.MatchConditions); list != wantList {
			t.Errorf("exempt list %s, want %s", list, wantList)
		}
		if diff := cmp.Diff(withList(t, plain.MatchConditions, wantList), got.MatchConditions, celWhitespace); diff != "" {
			t.Errorf("matchConditions beyond the list (-want +got):\n%s", diff)
		}
		args := podSpecOf(t, m, "Deployment", "quotagate-webhook").Containers[0].Args
		if !slices.Contains(args, "--exempt-daemonsets=monitoring/node-exporter,team-a/log-agent.v2") {
			t.Errorf("webhook args %v lack --exempt-daemonsets with the list", args)
		}
		if args := podSpecOf(t, mustInstall(t, defaultRelease, defaultNamespace, values("webhook", nil)), "Deployment", "quotagate-webhook").Containers[0].Args; slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--exempt-daemonsets") }) {
			t.Errorf("default webhook args %v name --exempt-daemonsets", args)
		}
	})

	t.Run("policy", func(t *testing.T) {
		plain, err := installAPI(values("policy", nil))
		if err != nil {
			t.Fatal(err)
		}
		m, err := installAPI(values("policy", exempt))
		if err != nil {
			t.Fatal(err)
		}
		var plainGate, gotGate admissionregistrationv1.MutatingAdmissionPolicy
		into(t, plain.find(t, "MutatingAdmissionPolicy", "quotagate-gate"), &plainGate)
		into(t, m.find(t, "MutatingAdmissionPolicy", "quotagate-gate"), &gotGate)
		if diff := cmp.Diff(withList(t, plainGate.Spec.MatchConditions, wantList), gotGate.Spec.MatchConditions, celWhitespace); diff != "" {
			t.Errorf("gate policy matchConditions (-want +got):\n%s", diff)
		}
		plainGuard, _ := plain.policy(t, "quotagate-bound-pod-guard")
		gotGuard, _ := m.policy(t, "quotagate-bound-pod-guard")
		if diff := cmp.Diff(withList(t, plainGuard.Spec.MatchConditions, wantList), gotGuard.Spec.MatchConditions, celWhitespace); diff != "" {
			t.Errorf("bound-pod guard matchConditions (-want +got):\n%s", diff)
		}
	})
}

func webhookOf(t *testing.T, m manifests) admissionregistrationv1.MutatingWebhook {
	t.Helper()
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	into(t, m.find(t, "MutatingWebhookConfiguration", "quotagate-webhook"), &mwc)
	return mwc.Webhooks[0]
}

// exemptList returns the CEL list the exempt condition tests `in`.
func exemptList(t *testing.T, conditions []admissionregistrationv1.MatchCondition) string {
	t.Helper()
	i := slices.IndexFunc(conditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == exemptCondition })
	if i < 0 {
		t.Fatalf("no matchCondition %s", exemptCondition)
	}
	_, rest, ok := strings.Cut(conditions[i].Expression, "+ r.name) in ")
	list, _, ok2 := strings.Cut(rest, "]")
	if !ok || !ok2 {
		t.Fatalf("matchCondition %s has no list of exempt DaemonSets: %s", exemptCondition, conditions[i].Expression)
	}
	return list + "]"
}

// withList returns conditions, whose exempt list is empty, with list in its place.
func withList(t *testing.T, conditions []admissionregistrationv1.MatchCondition, list string) []admissionregistrationv1.MatchCondition {
	t.Helper()
	out := slices.Clone(conditions)
	for i, c := range out {
		if c.Name == exemptCondition {
			out[i].Expression = strings.Replace(c.Expression, "+ r.name) in []", "+ r.name) in "+list, 1)
		}
	}
	return out
}
