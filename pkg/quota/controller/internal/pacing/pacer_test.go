package pacing

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSimulationPacerDrawsWhatWasWorked: what-ifs draw the time they worked from one
// bucket, so together they take no more than their share of a CPU; a what-if whose
// request ended draws nothing and does not wait, and one whose deadline comes before
// the bucket has its part waits for the deadline and no longer draws.
func TestSimulationPacerDrawsWhatWasWorked(t *testing.T) {
	if p := NewPacer(0); p != nil || p.Pace(t.Context()) != nil {
		t.Fatalf("--simulation-cpu=0 paces what-ifs (%v): it means no bound", p)
	}
	// A hundredth of a CPU refills 10 ms of work a second: the test sees what was drawn.
	p := NewPacer(0.01)
	tokens := func() float64 { return p.bucket.Tokens() }
	if got := tokens(); got != paceBurst {
		t.Fatalf("a new bucket holds %g ms, want %d", got, paceBurst)
	}
	if left := p.draw(t.Context(), 60*time.Millisecond+500*time.Microsecond); left != 500*time.Microsecond {
		t.Errorf("60.5 ms drawn left %s to draw, want the 0.5 ms under a millisecond", left)
	}
	if got := tokens(); got > paceBurst-60+5 {
		t.Errorf("after 60 ms of work the bucket holds %g ms, want about %d", got, paceBurst-60)
	}

	gone, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("the client went away"))
	before := tokens()
	if left := p.draw(gone, 80*time.Millisecond); left != 80*time.Millisecond {
		t.Errorf("a what-if whose client went away drew %s of 80 ms, want nothing", 80*time.Millisecond-left)
	}
	if got := tokens(); got > before+5 || got < before {
		t.Errorf("a what-if whose client went away took the bucket from %g to %g ms", before, got)
	}

	// 90 ms more would take seconds to refill: past the what-if's deadline.
	soon, stop := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer stop()
	before = tokens()
	p.draw(soon, 90*time.Millisecond)
	if soon.Err() == nil {
		t.Errorf("draw returned before the deadline of a what-if the bucket cannot serve in time")
	}
	if got := tokens(); got < before {
		t.Errorf("a what-if out of time drew from the bucket: %g ms, then %g", before, got)
	}
}
