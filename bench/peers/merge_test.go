package peers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A full-size run of Kueue's scenario alone is merged into the report of a smaller run of
// every part: its scenario replaces the report's and says which run it comes from, the
// report's other parts stay as they were; a run of another Kueue version is refused.
func TestMergeKeepsTheOtherParts(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r PeersReport) string {
		t.Helper()
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	small := PeersReport{Date: "2026-12-03 10:18 UTC", KueueVersion: "v0.17.0", N: 1000,
		DeepQueue: &deepQueue{}, Sched: &schedReport{Scale: 5, Workloads: 3000}}
	full := PeersReport{Date: "2026-12-03 12:32 UTC", Command: "go run ./bench -peers -peers-parts kueue-scheduler", Took: "1h5m0s",
		KueueVersion: "v0.17.0", Sched: &schedReport{Scale: 1, Workloads: 15000}}
	full.Machine.LoadBefore, full.Machine.LoadAfter = "0.30", "2.10"
	o := DefaultOptions()
	o.json, o.markdown = write("report.json", small), filepath.Join(dir, "report.md")
	o.merge = write("full.json", full)
	if err := mergeParts(o); err != nil {
		t.Fatal(err)
	}
	var got PeersReport
	raw, err := os.ReadFile(o.json)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Sched == nil || got.Sched.Workloads != 15000 || got.PartsFrom[partSched] == nil || got.PartsFrom[partSched].Date != full.Date {
		t.Errorf("the merged scenario is %+v, want the full-size run's, from %s", got.Sched, full.Date)
	}
	if got.Date != small.Date || got.DeepQueue == nil || got.N != 1000 || got.PartsFrom[partDeepQueue] != nil {
		t.Errorf("the merge changed the report's own run: date %q, deep queue %v, n %d", got.Date, got.DeepQueue, got.N)
	}
	md, err := os.ReadFile(o.markdown)
	if err != nil {
		t.Fatal(err)
	}
	if want := "This part was measured in a run of its own, on 2026-12-03 12:32 UTC: `go run ./bench -peers -peers-parts kueue-scheduler` (took 1h5m0s; load average 0.30 before, 2.10 after)."; !strings.Contains(string(md), want) {
		t.Errorf("the Markdown does not say where the scenario comes from (%q)", want)
	}

	full.KueueVersion = "v0.18.0"
	o.merge = write("other.json", full)
	if err := mergeParts(o); err == nil || !strings.Contains(err.Error(), "measured Kueue v0.18.0, the report Kueue v0.17.0") {
		t.Errorf("merging a run of another Kueue version: %v, want it refused", err)
	}
}
