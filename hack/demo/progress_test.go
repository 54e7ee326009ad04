package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// A long step says that it still runs, and for how long, at every heartbeat, then how
// long it took; a failed one says no "done".
func TestDuringSaysItStillRuns(t *testing.T) {
	was := heartbeat
	heartbeat = 20 * time.Millisecond
	t.Cleanup(func() { heartbeat = was })

	var out bytes.Buffer
	if err := during(&out, "building the webhook and manager", func() error { time.Sleep(110 * time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 {
		t.Fatalf("want at least two heartbeats and the end, got:\n%s", out.String())
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.Contains(l, "building the webhook and manager: still running, ") || !strings.HasSuffix(l, " so far") {
			t.Errorf("heartbeat %q does not say what runs and for how long", l)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "building the webhook and manager: done in ") {
		t.Errorf("the last line %q does not say how long the step took", last)
	}

	out.Reset()
	boom := errors.New("boom")
	if err := during(&out, "starting", func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("during returned %v, want the step's error", err)
	}
	if strings.Contains(out.String(), "done") {
		t.Errorf("a failed step says it is done:\n%s", out.String())
	}
}
