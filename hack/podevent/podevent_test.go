package podevent_test

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// podevent.sh rewrites pkg/quota's function headers to trace one event through the
// core of this checkout's HEAD. It must keep working as the core changes: each event
// must run through the calls that make it (the update, the admission, the
// confirmation), and the counts must add up.
func TestPodEventScript(t *testing.T) {
	for _, tc := range []struct {
		event string
		want  []string
	}{
		{"pod", []string{"AdmissionQueue.UpsertPod", "AdmissionQueue.Admit", "AdmissionQueue.Done", "ledger.charge", "ledger.release"}},
		{"budget", []string{"AdmissionQueue.UpsertBudget", "AdmissionQueue.Admit", "AdmissionQueue.Done", "ledger.charge"}},
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
