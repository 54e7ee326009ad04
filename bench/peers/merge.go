package peers

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/quotagate/quotagate/bench/report"
)

// partRun is the run a part of the report was measured in.
type partRun struct {
	Date       string `json:"date"`
	Command    string `json:"command"`
	Took       string `json:"took"`
	LoadBefore string `json:"loadAverageBefore"`
	LoadAfter  string `json:"loadAverageAfter"`
}

// fromLine says, for a part measured in a run of its own, which run: a paragraph, or "".
func (r PeersReport) fromLine(part string) string {
	f := r.PartsFrom[part]
	if f == nil {
		return ""
	}
	return fmt.Sprintf("\nThis part was measured in a run of its own, on %s: `%s` (took %s; load average %s before, %s after).\n",
		f.Date, f.Command, f.Took, f.LoadBefore, f.LoadAfter)
}

// mergeParts puts the parts of issue 35 that the run at o.merge measured (all but the
// figures) into the report at o.json, noting the run each comes from, and renders the
// report again: Kueue's scenario at full size takes over an hour by itself, and the
// memory growth at 50,000 pending half an hour.
func mergeParts(o Options) error {
	_, abs, err := report.RepoPaths()
	if err != nil {
		return err
	}
	var r, part PeersReport
	for path, into := range map[string]*PeersReport{abs(o.json): &r, o.merge: &part} {
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, into); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
	if part.KueueVersion != r.KueueVersion {
		return fmt.Errorf("-peers-merge: %s measured Kueue %s, the report Kueue %s", o.merge, part.KueueVersion, r.KueueVersion)
	}
	from := &partRun{Date: part.Date, Command: part.Command, Took: part.Took,
		LoadBefore: part.Machine.LoadBefore, LoadAfter: part.Machine.LoadAfter}
	var merged []string
	take := func(name string, has bool, put func()) {
		if !has {
			return
		}
		put()
		if r.PartsFrom == nil {
			r.PartsFrom = map[string]*partRun{}
		}
		r.PartsFrom[name] = from
		merged = append(merged, name)
	}
	take(partDeepQueue, part.DeepQueue != nil, func() { r.DeepQueue = part.DeepQueue })
	take(partMemoryGrowth, len(part.MemoryGrowth) > 0, func() { r.MemoryGrowth = part.MemoryGrowth })
	take(partFamilyRelease, part.FamilyRelease != nil, func() { r.FamilyRelease = part.FamilyRelease })
	take(partSched, part.Sched != nil, func() { r.Sched = part.Sched })
	if len(merged) == 0 {
		return fmt.Errorf("-peers-merge: %s has none of the parts %s", o.merge, strings.Join(peerParts[1:], ","))
	}
	report.Logf("Merging %s from %s", strings.Join(merged, ", "), o.merge)
	return report.Write(r, abs(o.json), abs(o.markdown))
}
