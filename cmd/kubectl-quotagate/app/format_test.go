package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/pkg/quota"
)

func TestUsageBar(t *testing.T) {
	tests := map[string]struct {
		used, hard string
		want       string
	}{
		"empty":                        {used: "0", hard: "4", want: "[░░░░░░░░░░]"},
		"a little shows one cell":      {used: "10m", hard: "64", want: "[█░░░░░░░░░]"},
		"three quarters":               {used: "3", hard: "4", want: "[████████░░]"},
		"almost full is not full":      {used: "3990m", hard: "4", want: "[█████████░]"},
		"full":                         {used: "4", hard: "4", want: "[██████████]"},
		"over hard (hard was lowered)": {used: "6", hard: "4", want: "[██████████]!"},
		"zero hard, nothing used":      {used: "0", hard: "0", want: "[░░░░░░░░░░]"},
		"memory units":                 {used: "16Gi", hard: "32Gi", want: "[█████░░░░░]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := usageBar(resource.MustParse(tc.used), resource.MustParse(tc.hard))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("usageBar(%s, %s) (-want +got):\n%s", tc.used, tc.hard, diff)
			}
		})
	}
}

func TestParseBudgetRef(t *testing.T) {
	tests := map[string]struct {
		arg     string
		want    quota.BudgetKey
		wantErr bool
	}{
		"name in the current namespace": {arg: "team-a", want: quota.BudgetKey{Namespace: "current", Name: "team-a"}},
		"namespace/name":                {arg: "team-b/gpus", want: quota.BudgetKey{Namespace: "team-b", Name: "gpus"}},
		"budget/name":                   {arg: "budget/gpus", want: quota.BudgetKey{Namespace: "current", Name: "gpus"}},
		"bdg/name":                      {arg: "bdg/gpus", want: quota.BudgetKey{Namespace: "current", Name: "gpus"}},
		"clusterbudget/name":            {arg: "clusterbudget/org", want: quota.BudgetKey{Name: "org"}},
		"ClusterBudget/name":            {arg: "ClusterBudget/org", want: quota.BudgetKey{Name: "org"}},
		"cbdg/name":                     {arg: "cbdg/org", want: quota.BudgetKey{Name: "org"}},
		"too many slashes":              {arg: "a/b/c", wantErr: true},
		"empty name":                    {arg: "clusterbudget/", wantErr: true},
		"empty":                         {arg: "", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseBudgetRef(tc.arg, "current")
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseBudgetRef(%q) error = %v, want error %v", tc.arg, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseBudgetRef(%q) (-want +got):\n%s", tc.arg, diff)
			}
		})
	}
}

func TestRequestsString(t *testing.T) {
	got := requestsString(parseList("requests.cpu=2,requests.memory=1Gi,limits.memory=2Gi,pods=1,count/pods=1,requests.nvidia.com/gpu=1"))
	if diff := cmp.Diff("cpu=2,memory=1Gi,nvidia.com/gpu=1", got); diff != "" {
		t.Errorf("requestsString (-want +got):\n%s", diff)
	}
}
