package estimate

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Why a simulation says a pod's start is unknown (Start.Unknown, Start.Reason): what
// the core says of the pods it left waiting, once no pod's end changes it.

// explain says why each waiting pod that did not start did not: the core's reason for
// what no pod's end changes, else what stopped the simulation.
func (s *sim) explain(capped bool) {
	var uids []types.UID
	for _, p := range s.w.Waiting[s.asked:] {
		if i := s.waiting[p.Pod.UID]; !s.out[i].started {
			uids = append(uids, p.Pod.UID)
		}
	}
	if len(uids) == 0 {
		return
	}
	reasons := s.q.Reader().WaitReasons(uids)
	for _, uid := range uids {
		o := &s.out[s.waiting[uid]]
		r, ok := reasons[uid]
		switch {
		case !ok:
			o.unknown, o.reason = UnknownBlocked, "the core does not hold it as a gated pod"
		case r.Code == quota.CodeBudgetClosed:
			o.unknown, o.reason = UnknownBudgetClosed, r.Message
		case r.Code == quota.CodeNeverFits || r.Code == quota.CodeMustSpecify:
			o.unknown, o.reason = UnknownNeverFits, r.Message
		case r.Code == quota.CodeHoursExhausted && strings.HasSuffix(r.Message, quota.HoursNeverFit):
			o.unknown, o.reason = UnknownNeverFits, r.Message
		case r.Code == quota.CodeHoursExhausted:
			// Time frees hours (a period ends, used decays, a day drops out): only the
			// simulation's bounds, or a reset beyond its horizon, leave it waiting.
			o.unknown, o.reason = UnknownCapped, fmt.Sprintf("it would start after %s, beyond what the estimate simulates: %s", s.clk.now.UTC().Format(time.RFC3339), r.Message)
		case !waitsForRoom(r.Code):
			o.unknown, o.reason = UnknownBlocked, r.Message
		case capped:
			o.unknown, o.reason = UnknownCapped, fmt.Sprintf("it would start after %s, beyond what the estimate simulates", s.clk.now.UTC().Format(time.RFC3339))
		case len(s.forever) > 0:
			o.unknown, o.reason = UnknownNoHistory, fmt.Sprintf("it waits for quota held by pods with no expected end (no activeDeadlineSeconds, no %s, fewer than %d finished pods like them)", v1alpha1.ExpectedDurationAnnotation, MinSamples)
		default:
			o.unknown, o.reason = UnknownBlocked, r.Message
		}
	}
}

// waitsForRoom reports whether a pod waiting with code waits for quota that pods'
// ends free.
func waitsForRoom(code quota.ReasonCode) bool {
	switch code {
	case quota.CodeInsufficient, quota.CodeNoLendable, quota.CodePreemptionPending, quota.CodeFairShare, quota.CodeBehindHead, quota.CodeQueued, quota.CodeBackoff:
		return true
	}
	return false
}
