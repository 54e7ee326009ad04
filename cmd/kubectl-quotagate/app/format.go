package app

import (
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"
)

// barWidth is how many cells a usage bar has.
const barWidth = 10

// usageBar draws used/hard as a bar of barWidth cells: "[███████░░░]". Any use shows at
// least one cell and a budget not quite full never shows a full bar, so the bar never
// hides that something is used or that room is left; over hard it ends in "!".
func usageBar(used, hard resource.Quantity) string {
	h := hard.AsApproximateFloat64()
	u := used.AsApproximateFloat64()
	filled := barWidth
	switch {
	case h <= 0 && u <= 0:
		filled = 0
	case h > 0:
		filled = int(math.Round(u / h * barWidth))
		if u > 0 && filled == 0 {
			filled = 1
		}
		if u < h && filled >= barWidth {
			filled = barWidth - 1
		}
		filled = min(filled, barWidth)
	}
	bar := "[" + strings.Repeat("█", filled) + strings.Repeat("░", barWidth-filled) + "]"
	if u > h {
		bar += "!"
	}
	return bar
}

// sortedNames returns the list's resource names in order.
func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// requestsString shows a pod's requests compactly, "cpu=2,memory=1Gi": the requests.*
// entries of its usage without the prefix. Limits and the pod counts are in -o json.
func requestsString(usage corev1.ResourceList) string {
	var parts []string
	for _, n := range sortedNames(usage) {
		if short, ok := strings.CutPrefix(string(n), corev1.DefaultResourceRequestsPrefix); ok {
			q := usage[n]
			parts = append(parts, short+"="+q.String())
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// age formats how long ago t was, as kubectl's AGE column does.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}
