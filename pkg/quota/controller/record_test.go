package controller

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestAdmissionRecordIsGuarded: every annotation the ungate patch writes, for an admission
// with everything set (budgets, borrowing, a flavor), is one of v1alpha1.ManagerWritten,
// which the gate guard refuses to everyone but the manager; and every annotation of that
// list is one the patch writes. A new annotation in the patch fails here until it is in
// the list, and then the guard's tests (charts/guard_test.go) until the guard refuses it.
func TestAdmissionRecordIsGuarded(t *testing.T) {
	a := quota.Admission{
		Pod:        quota.PodRef{UID: "u1", Namespace: "team-a", Name: "p"},
		Budgets:    []quota.BudgetKey{{Namespace: "team-a", Name: "b"}, {Name: "org"}},
		Borrowing:  []quota.BudgetKey{{Namespace: "team-a", Name: "b"}},
		Flavor:     &quota.Flavor{Name: "spot"},
		Labels:     map[string]string{"app": "web", "team": "a"},
		MaxRuntime: 2 * time.Hour,
	}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	record := admissionRecord(a, now)
	got := slices.Sorted(maps.Keys(record))
	want := slices.Sorted(slices.Values(v1alpha1.ManagerWrittenNames(v1alpha1.KeyAnnotation)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations the ungate patch writes (-v1alpha1.ManagerWritten +written):\n%s", diff)
	}
	wantRecord := map[string]string{
		v1alpha1.AdmittedAtAnnotation:         "2026-12-04T10:00:00Z",
		v1alpha1.AdmittedByAnnotation:         "team-a/b,org",
		v1alpha1.AdmittedLabelsAnnotation:     `{"app":"web","team":"a"}`,
		v1alpha1.BorrowingAnnotation:          "team-a/b",
		v1alpha1.FlavorAnnotation:             "spot",
		v1alpha1.AdmittedMaxRuntimeAnnotation: "2h0m0s",
	}
	if diff := cmp.Diff(wantRecord, record); diff != "" {
		t.Errorf("admission record (-want +got):\n%s", diff)
	}
	// Without borrowing, a flavor or a declared maximum runtime the patch writes none of
	// them: their absence says so.
	plain := admissionRecord(quota.Admission{Budgets: a.Budgets[:1]}, now)
	if diff := cmp.Diff(map[string]string{v1alpha1.AdmittedAtAnnotation: "2026-12-04T10:00:00Z", v1alpha1.AdmittedByAnnotation: "team-a/b", v1alpha1.AdmittedLabelsAnnotation: "{}"}, plain); diff != "" {
		t.Errorf("admission record without borrowing or flavor (-want +got):\n%s", diff)
	}
}
