package quota

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// TestAccountableNames checks quotaName and usageKey against the one list of names
// quotagate accounts (api/v1alpha1/accountable.go; test/crdvalidation checks the
// CRD's rule and NormalizeHard against it with more names of the patterns' forms):
// quotaName accepts every listed name and near misses of none; and for every name a
// container asks for, pods that differ only in its quantity differ in usageKey, and
// SharedPodUsage charges each its own quantity under the name quotaName gives.
func TestAccountableNames(t *testing.T) {
	names := append([]corev1.ResourceName{}, v1alpha1.AccountableResourceNames...)
	// One name of each pattern's form, bare and with requests.
	names = append(names, "hugepages-2Mi", "requests.hugepages-1Gi", "nvidia.com/gpu", "requests.nvidia.com/gpu",
		"gpu.deviceclass.resource.k8s.io/devices", "requests.deviceclass.resource.kubernetes.io/gpu")
	for _, name := range v1alpha1.AccountableResourceNames {
		if qn, ok := quotaName(name + "s"); ok {
			t.Errorf("quotaName(%q) = %q, accountable; only %q is", name+"s", qn, name)
		}
		if qn, ok := quotaName(corev1.ResourceName(strings.ToUpper(string(name)))); ok {
			t.Errorf("quotaName(%q) = %q, accountable; only %q is", strings.ToUpper(string(name)), qn, name)
		}
	}
	var buf1, buf2 [512]byte
	for _, name := range names {
		qn, ok := quotaName(name)
		if !ok {
			t.Errorf("quotaName(%q): not accountable; v1alpha1 lists it", name)
			continue
		}
		s := string(qn)
		rest, isLimit := strings.CutPrefix(s, limitsPrefix)
		if !isLimit {
			rest, ok = strings.CutPrefix(s, requestsPrefix)
		}
		if !ok || isDeviceQuotaName(qn) {
			continue // pods, count/pods and DRA devices are not asked for by containers
		}
		pod := func(q string) *corev1.Pod {
			list := corev1.ResourceList{corev1.ResourceName(rest): resource.MustParse(q)}
			return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Resources: corev1.ResourceRequirements{Requests: list, Limits: list},
			}}}}
		}
		one, two := pod("1"), pod("2")
		if string(usageKey(buf1[:0], one)) == string(usageKey(buf2[:0], two)) {
			t.Errorf("%s: pods asking 1 and 2 of %s have the same usageKey", name, rest)
		}
		for _, p := range []*corev1.Pod{one, two, one} {
			want := p.Spec.Containers[0].Resources.Requests[corev1.ResourceName(rest)]
			if got := SharedPodUsage(p)[qn]; got.Cmp(want) != 0 {
				t.Errorf("%s: SharedPodUsage charges %s under %s, want %s", name, got.String(), qn, want.String())
			}
		}
	}
}
