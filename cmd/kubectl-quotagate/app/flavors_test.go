package app

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// flavor is a Flavor whose nodes carry gpu.product=name.
func flavor(name string) *v1alpha1.Flavor {
	return &v1alpha1.Flavor{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.FlavorSpec{NodeLabels: map[string]string{"gpu.product": name}},
	}
}

// onGPU selects the nodes with gpu.product=model in the pod's nodeSelector.
func onGPU(p *corev1.Pod, model string) *corev1.Pod {
	p.Spec.NodeSelector = map[string]string{"gpu.product": model}
	return p
}

// gpuWorld is namespace ml with Budget ml/gpus: 16 CPUs over all flavors, 2 GPUs on
// h100, then 1 on a100, then spot with no hard of its own. Three GPU pods fill h100
// and a100; the fourth and one pinned to h100 wait, and one that selects a GPU model
// no flavor has can never be admitted.
func gpuWorld(t *testing.T) *world {
	t.Helper()
	gpus := budget("ml", "gpus", "requests.cpu=16", "")
	gpus.Spec.Flavors = []v1alpha1.FlavorQuota{
		{Name: "h100", Hard: parseList("requests.nvidia.com/gpu=2")},
		{Name: "a100", Hard: parseList("requests.nvidia.com/gpu=1")},
		{Name: "spot", Hard: parseList("requests.nvidia.com/gpu=0")},
	}
	return newFlavoredWorld(t, []*v1alpha1.Flavor{flavor("h100"), flavor("a100"), flavor("spot")},
		t0.Add(5*time.Minute),
		[]*corev1.Namespace{namespace("ml", true)},
		[]*v1alpha1.Budget{gpus},
		nil,
		[]*corev1.Pod{
			makePod("ml", "train-1").Req("cpu=1,nvidia.com/gpu=1").Created(10).Obj(),
			makePod("ml", "train-2").Req("cpu=1,nvidia.com/gpu=1").Created(20).Obj(),
			makePod("ml", "train-3").Req("cpu=1,nvidia.com/gpu=1").Created(30).Obj(),
			makePod("ml", "train-4").Req("cpu=1,nvidia.com/gpu=1").Created(40).Obj(),
			onGPU(makePod("ml", "pinned").Req("cpu=1,nvidia.com/gpu=1").Created(50).Obj(), "h100"),
			onGPU(makePod("ml", "v100").Req("cpu=1,nvidia.com/gpu=1").Created(60).Obj(), "v100"),
		})
}

// budgets lists a flavored budget's own hard, then each resource of each flavor's hard,
// in the order pods try the flavors; a flavor has no PENDING of its own.
func TestBudgetsShowFlavors(t *testing.T) {
	w := gpuWorld(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"table": {
			args: []string{"budgets", "-n", "ml"},
			want: `BUDGET           STATE   ADMITTED   GATED   OLDEST WAIT   RESOURCE                          USED/HARD   USAGE
Budget ml/gpus   Open    3          3       9m20s         requests.cpu                      3/16        [██░░░░░░░░]
                                                          requests.nvidia.com/gpu on h100   2/2         [██████████]
                                                          requests.nvidia.com/gpu on a100   1/1         [██████████]
                                                          requests.nvidia.com/gpu on spot   0/0         [░░░░░░░░░░]
`,
		},
		"wide": {
			args: []string{"budgets", "-n", "ml", "-o", "wide"},
			want: `BUDGET           STATE   STRATEGY         PARENT   ADMITTED   GATED   OLDEST WAIT   RESOURCE                          USED/HARD   PENDING   USAGE
Budget ml/gpus   Open    BestEffortFIFO   -        3          3       9m20s         requests.cpu                      3/16        3         [██░░░░░░░░]
                                                                                    requests.nvidia.com/gpu on h100   2/2         -         [██████████]
                                                                                    requests.nvidia.com/gpu on a100   1/1         -         [██████████]
                                                                                    requests.nvidia.com/gpu on spot   0/0         -         [░░░░░░░░░░]
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if err != nil {
				t.Fatalf("budgets: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// A flavor's borrowed and lent show on its lines as on the budget's; a flavor whose
// hard names nothing still has a line, so every flavor of the budget is listed.
func TestFlavorLines(t *testing.T) {
	r := budgetRow{
		Key: quota.BudgetKey{Namespace: "ml", Name: "gpus"}, State: "Open", OldestWait: "-",
		Hard: parseList("requests.cpu=16"), Used: parseList("requests.cpu=3"),
		Flavors: []v1alpha1.FlavorStatus{
			{Name: "h100", Hard: parseList("requests.nvidia.com/gpu=2"), Used: parseList("requests.nvidia.com/gpu=3"), Borrowed: parseList("requests.nvidia.com/gpu=1")},
			{Name: "a100", Hard: parseList("requests.nvidia.com/gpu=4"), Used: parseList("requests.nvidia.com/gpu=1"), Lent: parseList("requests.nvidia.com/gpu=2")},
			{Name: "spot"},
		},
	}
	var got [][]any
	for _, row := range budgetTableRows([]budgetRow{r}) {
		got = append(got, row.Cells[7:])
	}
	want := [][]any{
		{"requests.cpu", "3/16", "0", "[██░░░░░░░░]"},
		{"requests.nvidia.com/gpu on h100", "3/2 (1 borrowed)", "-", "[██████████]!"},
		{"requests.nvidia.com/gpu on a100", "1/4 (2 lent)", "-", "[███░░░░░░░]"},
		{"(no hard) on spot", "-", "-", "-"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RESOURCE, USED/HARD, PENDING, USAGE (-want +got):\n%s", diff)
	}
}

// queue and why print a flavored waiting reason whole: the flavor the pod waits for, and
// the reason of a pod that no flavor can take.
func TestQueueAndWhyShowFlavoredReasons(t *testing.T) {
	w := gpuWorld(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"queue": {
			args: []string{"queue", "ml/gpus"},
			want: `Budget ml/gpus: Open, BestEffortFIFO, 3 gated
POSITION   POD          PRIORITY   REQUESTS                 WAITING   QUEUE          ETA   REASON
1          ml/train-4   0          cpu=1,nvidia.com/gpu=1   9m20s     inadmissible   -     requests.nvidia.com/gpu on flavor h100: 1 requested, 0 free in Budget ml/gpus; position 1 of 3
2          ml/pinned    0          cpu=1,nvidia.com/gpu=1   9m10s     inadmissible   -     requests.nvidia.com/gpu on flavor h100: 1 requested, 0 free in Budget ml/gpus; position 2 of 3
3          ml/v100      0          cpu=1,nvidia.com/gpu=1   9m        inadmissible   -     no flavor of Budget ml/gpus can take it: its node selector asks for other node labels than h100, a100, spot
`,
		},
		"why, waiting for its flavor": {
			args: []string{"why", "ml/pinned"},
			want: `Pod ml/pinned is waiting for 9m10s (gate quotagate.io/budget)
Reason: requests.nvidia.com/gpu on flavor h100: 1 requested, 0 free in Budget ml/gpus; position 2 of 3
BUDGET           POSITION   QUEUE
Budget ml/gpus   2 of 3     inadmissible
`,
		},
		"why, admitted on its flavor": {
			args: []string{"why", "ml/train-3"},
			want: "Pod ml/train-3 was admitted at 2026-01-01T09:05:00Z (5m ago, after waiting 4m30s) by Budget ml/gpus, on flavor a100 (quotagate added its node labels and tolerations)\n",
		},
		"why, no flavor can take it": {
			args: []string{"why", "ml/v100"},
			want: `Pod ml/v100 is waiting for 9m (gate quotagate.io/budget)
Reason: no flavor of Budget ml/gpus can take it: its node selector asks for other node labels than h100, a100, spot
BUDGET           POSITION   QUEUE
Budget ml/gpus   3 of 3     inadmissible
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}
