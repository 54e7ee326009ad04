package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestStartRulesHoldPodsUntilTheirTime, against a real kube-apiserver: a Budget whose
// spec.start is a few seconds ahead holds a plain pod, and a Job whose pod template says
// quotagate.io/not-before later still holds its pod past the budget's instant. Each pod
// waits with reason StartLater naming the rule that holds it, is never ungated before its
// instant (its admitted-at is not earlier, nor was it seen ungated earlier), and is
// ungated once the instant has passed; the delay from instant to ungate is logged.
func TestStartRulesHoldPodsUntilTheirTime(t *testing.T) {
	ns := newNamespace(t, true)
	startManager(t, nil, false)
	// Whole seconds: the API keeps a time to the second.
	budgetAt := time.Now().Add(10 * time.Second).Truncate(time.Second)
	podAt := budgetAt.Add(3 * time.Second)
	b := budget(ns, "b", cpu("8"), "")
	b.Spec.Start = &v1alpha1.StartRule{NotBefore: &metav1.Time{Time: budgetAt}}
	mustCreate(t, b)

	plain := gatedPod(ns, "plain", "1")
	job := gatedJob(ns, "later", "1", 1, "1h", "")
	job.Spec.Template.Annotations[v1alpha1.NotBeforeAnnotation] = podAt.Format(time.RFC3339)
	mustCreate(t, plain, job)

	reasonOf := func(p *corev1.Pod) (string, string) {
		for _, c := range p.Status.Conditions {
			if c.Type == v1alpha1.PodConditionAdmitted {
				return c.Reason, c.Message
			}
		}
		return "", ""
	}
	testbed.Poll(t, time.Minute, "both pods waiting with StartLater", func(context.Context) (bool, error) {
		n := 0
		for _, p := range podsOf(t, ns) {
			reason, msg := reasonOf(&p)
			switch {
			case reason != string(quota.CodeStartLater):
			case p.Name == "plain" && strings.Contains(msg, "Budget "+ns+"/b starts its pods not before"):
				n++
			case strings.HasPrefix(p.Name, "later-") && strings.Contains(msg, "starts not before "+podAt.UTC().Format(time.RFC3339)):
				n++
			}
		}
		return n == 2, nil
	})

	ungatedAt := map[string]time.Time{}
	testbed.PollEvery(t, 20*time.Millisecond, 2*time.Minute, "both pods ungated", func(context.Context) (bool, error) {
		pods := podsOf(t, ns)
		// Taken once the list is back: a pod it shows ungated was ungated by then. A
		// time taken before the list would blame a slow list on the manager.
		now := time.Now()
		for _, p := range pods {
			if gates.HasGate(&p, v1alpha1.SchedulingGate) {
				continue
			}
			name := p.Name
			if strings.HasPrefix(name, "later-") {
				name = "later"
			}
			if _, seen := ungatedAt[name]; !seen {
				ungatedAt[name] = now
			}
		}
		return len(ungatedAt) == 2, nil
	})
	for name, at := range map[string]time.Time{"plain": budgetAt, "later": podAt} {
		if ungatedAt[name].Before(at) {
			t.Errorf("%s was seen ungated at %s, %v before its instant %s", name, ungatedAt[name].Format(time.RFC3339Nano), at.Sub(ungatedAt[name]), at)
		}
		t.Logf("%s: seen ungated %v after its instant (polling every 20 ms)", name, ungatedAt[name].Sub(at))
	}
	for _, p := range podsOf(t, ns) {
		admitted, err := time.Parse(time.RFC3339, p.Annotations[v1alpha1.AdmittedAtAnnotation])
		if err != nil {
			t.Fatalf("pod %s: admitted-at %q: %v", p.Name, p.Annotations[v1alpha1.AdmittedAtAnnotation], err)
		}
		at := budgetAt
		if p.Name != "plain" {
			at = podAt
		}
		if admitted.Before(at) {
			t.Errorf("pod %s admitted at %s, before its instant %s", p.Name, admitted, at)
		}
	}
}
