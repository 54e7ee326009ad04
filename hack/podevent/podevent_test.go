package podevent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// featureFiles are the files of the parts a budget with no parent, no flavors and no
// group, where nothing is preempted and no pod has a start rule, has no use for
// (pkg/quota/doc.go): the family part (borrowing, lending, fair sharing, lend holds), the
// preemption part, the groups, the flavors and start control.
var featureFiles = []string{
	"families.go", "borrowing.go", "fairshare.go", "hold.go", "lendclaims.go",
	"preemptions.go", "preempt.go", "preemptcooldown.go", "victims.go", "victimorder.go", "reclaimfloor.go", "blocked.go",
	"groups.go", "groups_settle.go",
	"flavors.go", "flavor_choice.go", "flavor_api.go", "flavor.go",
	"starts.go",
}

// Every file featureFiles names is one of the core's: a file renamed or split fails
// here rather than leave the check below looking for a name that no longer exists.
func TestFeatureFilesExist(t *testing.T) {
	for _, f := range featureFiles {
		if _, err := os.Stat(filepath.Join("..", "..", "pkg", "quota", f)); err != nil {
			t.Errorf("featureFiles names %s: %v", f, err)
		}
	}
}

// podevent.sh rewrites pkg/quota's function headers to trace one event through the
// core of this checkout's HEAD. It must keep working as the core changes: each event
// must run through the calls that make it (the update, the admission, the
// confirmation), and the counts must add up.
func TestPodEventScript(t *testing.T) {
	for _, tc := range []struct {
		event string
		want  []string
	}{
		// The ledger is a package of its own (pkg/quota/internal/ledger), which the
		// script does not trace: the charges part's calls into it stand for it.
		{"pod", []string{"AdmissionQueue.UpsertPod", "AdmissionQueue.Admit", "AdmissionQueue.Done", "charges.chargeWith", "charges.release"}},
		{"budget", []string{"AdmissionQueue.UpsertBudget", "AdmissionQueue.Admit", "AdmissionQueue.Done", "charges.chargeWith"}},
	} {
		t.Run(tc.event, func(t *testing.T) {
			out, err := exec.Command("./podevent.sh", "-e", tc.event).CombinedOutput()
			if err != nil {
				t.Fatalf("podevent.sh -e %s: %v\n%s", tc.event, err, out)
			}
			text := string(out)
			m := regexp.MustCompile(`(?m)^every call: calls: (\d+), files: (\d+), moves between files: (\d+), of them back to a file left before: (\d+), functions: (\d+)$`).FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("no summary line in:\n%s", text)
			}
			n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
			calls, files, moves, back, funcs := n(1), n(2), n(3), n(4), n(5)
			if calls < funcs || funcs < files || files < 2 || moves < files-1 || back > moves {
				t.Errorf("counts do not add up: %d calls, %d functions, %d files, %d moves, %d back", calls, funcs, files, moves, back)
			}
			// Each call the event makes into the core is counted on its own, and together
			// they hold every call of the event.
			perCall := regexp.MustCompile(`(?m)^  (\S+): calls: (\d+), files: (\d+), moves between files: (\d+), of them back to a file left before: (\d+)$`).FindAllStringSubmatch(text, -1)
			sum := 0
			var names []string
			for _, c := range perCall {
				v, _ := strconv.Atoi(c[2])
				sum += v
				names = append(names, c[1])
			}
			if sum != calls || len(perCall) < 3 || names[len(names)-1] != "AdmissionQueue.Done" {
				t.Errorf("the calls into the core (%v) hold %d calls, want all %d of the event, the last AdmissionQueue.Done", names, sum, calls)
			}
			for _, fn := range tc.want {
				if !strings.Contains(text, " "+fn+"\n") {
					t.Errorf("the event's functions do not include %s:\n%s", fn, text)
				}
			}
			// The event is in a namespace with one Budget, no parent, no group, no
			// flavor and nothing to preempt: it enters none of those features' files.
			for _, fn := range regexp.MustCompile(`(?m)^  (\S+\.go) +(\S+)$`).FindAllStringSubmatch(text, -1) {
				if slices.Contains(featureFiles, fn[1]) {
					t.Errorf("the event enters %s (%s), a file of a feature it does not use", fn[1], fn[2])
				}
			}
		})
	}
}

// An event the program does not know is refused with the two it knows, not traced.
func TestPodEventScriptRefusesAnUnknownEvent(t *testing.T) {
	out, err := exec.Command("./podevent.sh", "-e", "namespace").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "pod or budget") {
		t.Errorf("podevent.sh -e namespace: err %v, output %q; want a refusal naming pod or budget", err, out)
	}
}
