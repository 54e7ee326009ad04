package ui

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// A budget's hour budget (spec.usageLimits, docs/budgets.md "Hour budgets") as its card
// shows it: per resource of hours, what its pods used and reserved of them as the
// manager last wrote status.usage, and when that is forgotten. The spec says how hours
// are counted; the status gives the figures, the period's name and its end.

// hoursView is one resource of a budget's hours in one sentence, and whether used plus
// reserved has reached the hours: no pod that may use more is admitted then.
type hoursView struct {
	Text      string
	Exhausted bool
}

// hoursViews are the resources of limits' hours, in name order, with what st says was
// used and reserved of them; nil for a budget without usageLimits.
//
//	requests.cpu: 3.5 of 10 resource-hours used in 2026-12 (2 reserved); resets 2027-01-01 00:00:00
//	requests.cpu: 9 of 10 resource-hours used in 2026-12 (1 reserved); exhausted until 2027-01-01 00:00:00
//	requests.cpu: 3.5 of 10 resource-hours used; rolling 7 days
//	requests.cpu: 10 resource-hours a day, none used yet
func hoursViews(limits *v1alpha1.UsageLimits, st *v1alpha1.UsageStatus) []hoursView {
	if limits == nil {
		return nil
	}
	names := make([]string, 0, len(limits.Hours))
	for n := range limits.Hours {
		names = append(names, string(n))
	}
	slices.Sort(names)
	out := make([]hoursView, 0, len(names))
	for _, n := range names {
		rn := corev1.ResourceName(n)
		hours := limits.Hours[rn]
		if st == nil {
			out = append(out, hoursView{Text: n + ": " + hoursAmount(hours) + " resource-hours " + countedPer(limits) + ", none used yet"})
			continue
		}
		used, reserved := st.Used[rn], st.Reserved[rn]
		sum := used.DeepCopy()
		sum.Add(reserved)
		v := hoursView{Exhausted: sum.Cmp(hours) >= 0}
		var b strings.Builder
		b.WriteString(n + ": " + hoursAmount(used) + " of " + hoursAmount(hours) + " resource-hours used")
		if st.ResetAt != nil && st.Period != "" {
			b.WriteString(" in " + st.Period)
		}
		if reserved.Sign() > 0 {
			b.WriteString(" (" + hoursAmount(reserved) + " reserved)")
		}
		if c := untilFree(limits, st, v.Exhausted); c != "" {
			b.WriteString("; " + c)
		}
		v.Text = b.String()
		out = append(out, v)
	}
	return out
}

// countedPer is how limits counts hours, after "10 resource-hours": "a day", "in
// rolling 7 days", "decaying with a half-life of 8h".
func countedPer(limits *v1alpha1.UsageLimits) string {
	switch {
	case limits.Period != "":
		return "a " + strings.ToLower(string(limits.Period))
	case limits.RollingDays > 0:
		return "in " + rollingDays(limits.RollingDays)
	case limits.HalfLife != nil:
		return "decaying with a half-life of " + compactDuration(limits.HalfLife.Duration)
	}
	return ""
}

// untilFree says when what was used is forgotten: the reset of a calendar period
// (resetAt, which only a calendar period has), or how a rolling window or a half-life
// forgets. Exhausted, it says that the hours are used up until then.
func untilFree(limits *v1alpha1.UsageLimits, st *v1alpha1.UsageStatus, exhausted bool) string {
	switch {
	case st.ResetAt != nil && exhausted:
		return "exhausted until " + localClock(st.ResetAt.Time)
	case st.ResetAt != nil:
		return "resets " + localClock(st.ResetAt.Time)
	case limits.RollingDays > 0 && exhausted:
		return "exhausted until enough is forgotten (" + rollingDays(limits.RollingDays) + ")"
	case limits.RollingDays > 0:
		return rollingDays(limits.RollingDays)
	case limits.HalfLife != nil && exhausted:
		return "exhausted until enough decays (half-life " + compactDuration(limits.HalfLife.Duration) + ")"
	case limits.HalfLife != nil:
		return "decays with a half-life of " + compactDuration(limits.HalfLife.Duration)
	case exhausted:
		return "exhausted"
	}
	return ""
}

func rollingDays(n int32) string {
	if n == 1 {
		return "rolling 1 day"
	}
	return "rolling " + strconv.Itoa(int(n)) + " days"
}

// hoursAmount is q resource-hours, compact: at most three decimals, rounded up as the
// manager rounds what it writes (to the milli-hour), without trailing zeros ("3.5",
// "10", "0.001"). An amount too large for milli-hours is written in whole hours.
func hoursAmount(q resource.Quantity) string {
	if q.Sign() < 0 { // not written by the manager; shown as it is
		return q.String()
	}
	if q.CmpInt64(math.MaxInt64/1000) > 0 {
		return strconv.FormatInt(q.Value(), 10)
	}
	m := q.MilliValue()
	s := strconv.FormatInt(m/1000, 10)
	if f := m % 1000; f != 0 {
		s += strings.TrimRight("."+strconv.FormatInt(1000+f, 10)[1:], "0")
	}
	return s
}

// compactDuration is d as Go writes it, without the zero minutes and seconds it adds
// to whole hours ("8h", "1h30m", "90s").
func compactDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
