package quota

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/ledger"
)

// fuzzQuantity reads a quantity a tenant could write from s: one the API server
// accepts, with a decimal exponent of at most two digits (resource.ParseQuantity
// itself takes minutes on exponents of ten digits, and the API server would too).
func fuzzQuantity(s string) (resource.Quantity, bool) {
	if i := strings.IndexAny(s, "eE"); i >= 0 && s[i:] != "Ei" && len(s)-i > 3 {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() < 0 {
		return resource.Quantity{}, false
	}
	return q, true
}

// FuzzPodUsage: whatever a pod's containers request and limit, NewPod says which value
// cannot be counted exactly when one is beyond the bound, and otherwise the core's
// amounts of its usage are the exact values of PodUsage (Quantity arithmetic, the
// oracle): no value is rounded, saturated or dropped.
func FuzzPodUsage(f *testing.F) {
	f.Add("1", "100m", "2Gi", "9Pi", "500m", "1e19")
	f.Add("9223372036854775807", "9223372036854775807", "8Ei", "8Ei", "1n", "0")
	f.Add("3.3333333333", "1u", "100Mi", "4Ei", "4Ei", "4Ei")
	f.Fuzz(func(t *testing.T, cpu1, cpu2, mem1, mem2, lim1, lim2 string) {
		var req, lim []string
		for _, kv := range [][2]string{{"cpu", cpu1}, {"memory", mem1}} {
			if q, ok := fuzzQuantity(kv[1]); ok {
				req = append(req, kv[0]+"="+q.String())
			}
		}
		for _, kv := range [][2]string{{"cpu", lim1}, {"memory", mem2}} {
			if q, ok := fuzzQuantity(kv[1]); ok {
				lim = append(lim, kv[0]+"="+q.String())
			}
		}
		b := makePod("p")
		if len(req) > 0 {
			b.Req(strings.Join(req, ","))
		}
		if len(lim) > 0 {
			b.Lim(strings.Join(lim, ","))
		}
		obj := b.Obj()
		if q, ok := fuzzQuantity(cpu2); ok { // an init container: its request counts where it is the larger
			obj.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.invalid/init",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q}}}}
		}
		if q, ok := fuzzQuantity(lim2); ok { // pod overhead adds to every container's sum
			obj.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: q}
		}
		pod := NewPod(obj, v1alpha1.SchedulingGate, t0)
		want := PodUsage(obj)
		var beyond corev1.ResourceName
		max := resource.MustParse("9223372036854775807")
		for r, q := range want {
			if q.Cmp(max) > 0 && (beyond == "" || r < beyond) {
				beyond = r
			}
		}
		if pod.Uncountable != beyond {
			t.Fatalf("Uncountable = %q, want %q (usage %v)", pod.Uncountable, beyond, want)
		}
		if beyond != "" {
			return
		}
		got := sharedAmountsOf(pod.Usage)
		for r, q := range want {
			v := got[r]
			if back := v.Quantity(q.Format); back.Cmp(q) != 0 {
				t.Fatalf("%s: the core counts %s, PodUsage says %s", r, back.String(), q.String())
			}
		}
		if len(got) != len(want) {
			t.Fatalf("the core counts %d resources, PodUsage has %d", len(got), len(want))
		}
	})
}

// FuzzLedger: any sequence of charges and releases of pods (any countable values, and
// claims they share) leaves a ledger whose used is exactly the sum, with Quantity
// arithmetic, of what its charged pods add, each shared claim once; and an excess is
// reported exactly when a value above zero would take a sum past hard.
func FuzzLedger(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07"), "9Pi", "8Ei", "1n")
	f.Add([]byte("\x10\x11\x92\x93\x14\x95\x16\x97\x18"), "9223372036854775807", "100m", "3")
	f.Fuzz(func(t *testing.T, ops []byte, a, b, c string) {
		var values []resource.Quantity
		for _, s := range []string{a, b, c} {
			if q, ok := fuzzQuantity(s); ok && amount.Countable(q) {
				values = append(values, q)
			}
		}
		if len(values) == 0 {
			return
		}
		hard := values[0].DeepCopy()
		hard.Add(values[len(values)-1])
		if !amount.Countable(hard) {
			return // NormalizeHard refuses such a hard: the budget is not Ready
		}
		l := ledger.New[*podState]()
		l.SetHard(corev1.ResourceList{"limits.memory": hard, "requests.cpu": *resource.NewQuantity(1_000_000, resource.DecimalSI)})
		type charge struct {
			p     *podState
			usage corev1.ResourceList
			claim string
		}
		var charged []charge
		for i, op := range ops {
			v := values[int(op)%len(values)]
			if op&0x80 != 0 && len(charged) > 0 {
				k := int(op>>3) % len(charged)
				ch := charged[k]
				l.Release(ch.p.pod.UID, ch.p.usage(), ch.p.claims())
				charged = append(charged[:k], charged[k+1:]...)
			} else {
				usage := corev1.ResourceList{"limits.memory": v, "requests.cpu": resource.MustParse("1")}
				p := &podState{pod: Pod{PodRef: PodRef{UID: types.UID(fmt.Sprint(i)), Name: fmt.Sprint(i)}, Usage: usage}}
				ch := charge{p: p, usage: usage}
				if op&0x40 != 0 { // a shared claim of one device
					ch.claim = "ns/claim"
					p.pod.Claims = []ClaimCharge{{Key: ch.claim, Usage: corev1.ResourceList{"requests.cpu": resource.MustParse("1")}}}
				}
				// excess says exactly whether the charge passes hard (a value of zero
				// fits whatever is used, as in ResourceQuota).
				sum := l.Used()["limits.memory"].Quantity(resource.DecimalSI)
				sum.Add(v)
				if _, over := l.Excess(p.adds(&budget{ledger: l})); over != (v.Sign() > 0 && sum.Cmp(hard) > 0) {
					t.Fatalf("excess = %v with %s used beside %s of %s hard", over, sum.String(), v.String(), hard.String())
				}
				chargeLedger(&l, p, p.usage(), p.claims())
				charged = append(charged, ch)
			}
			// The ledger's used is the exact sum.
			mem, cpu := resource.Quantity{}, resource.Quantity{}
			claimSeen := false
			for _, ch := range charged {
				mem.Add(ch.usage["limits.memory"])
				cpu.Add(ch.usage["requests.cpu"])
				if ch.claim != "" {
					if claimSeen {
						cpu.Sub(resource.MustParse("1")) // the shared claim is charged once
					}
					claimSeen = true
				}
			}
			_, used, _ := l.Totals()
			if got := used["limits.memory"]; got.Cmp(mem) != 0 {
				t.Fatalf("step %d: used limits.memory = %s, the sum of the charged pods is %s", i, got.String(), mem.String())
			}
			if got := used["requests.cpu"]; got.Cmp(cpu) != 0 {
				t.Fatalf("step %d: used requests.cpu = %s, the sum of the charged pods is %s", i, got.String(), cpu.String())
			}
		}
	})
}
