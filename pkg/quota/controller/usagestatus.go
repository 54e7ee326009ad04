package controller

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/hours"
)

// usageStatus is a budget's status.usage from what the core's hours hold (nil for a
// budget without usageLimits). Amounts are rounded up to the milli-hour (to the hour
// beyond what that can hold), so that what a restart reads back is never less than
// what was used.
func usageStatus(st *hours.State) *v1alpha1.UsageStatus {
	if st == nil {
		return nil
	}
	out := &v1alpha1.UsageStatus{Period: st.Period, AsOf: metav1.NewMicroTime(st.AsOf), Used: hoursList(st.Used), Reserved: hoursList(st.Reserved)}
	if !st.PeriodStart.IsZero() {
		t := metav1.NewTime(st.PeriodStart)
		out.PeriodStart = &t
	}
	if !st.ResetAt.IsZero() {
		t := metav1.NewTime(st.ResetAt)
		out.ResetAt = &t
	}
	for _, d := range st.Days {
		out.Days = append(out.Days, v1alpha1.UsageDay{Date: d.Date, Used: hoursList(d.Used)})
	}
	return out
}

// fairSharingStatus is a budget's status.fairSharing from the core's memory of it (nil
// when its parent has no usageHalfLife). Used is rounded up as usageStatus rounds, the
// share to the nearest thousandth.
func fairSharingStatus(st *quota.FairSharingStatus) *v1alpha1.FairSharingStatus {
	if st == nil {
		return nil
	}
	share := int64(0)
	if st.Share > 0 {
		share = int64(math.Round(min(st.Share, 1e6) * 1000))
	}
	return &v1alpha1.FairSharingStatus{AsOf: metav1.NewMicroTime(st.AsOf), Used: hoursList(st.Used), UsageShare: share}
}

func hoursList(m map[corev1.ResourceName]float64) corev1.ResourceList {
	if len(m) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(m))
	for r, v := range m {
		out[r] = hoursQuantity(v)
	}
	return out
}

// hoursQuantity is v resource-hours, rounded up.
func hoursQuantity(v float64) resource.Quantity {
	switch {
	case v <= 0 || math.IsNaN(v):
		return *resource.NewQuantity(0, resource.DecimalSI)
	case v*1000 < math.MaxInt64/2:
		return *resource.NewMilliQuantity(int64(math.Ceil(v*1000)), resource.DecimalSI)
	case v < math.MaxInt64/2:
		return *resource.NewQuantity(int64(math.Ceil(v)), resource.DecimalSI)
	default:
		return *resource.NewQuantity(math.MaxInt64/2, resource.DecimalSI)
	}
}
