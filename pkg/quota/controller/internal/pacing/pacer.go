package pacing

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// Pacer bounds the CPU that what-ifs take together, beside the admission
// loop, to a share of one CPU (Options.SimulationCPU): a token bucket of milliseconds of
// work (golang.org/x/time/rate) that every running what-if draws from. At each step of
// its simulation (estimate.Options.Pace) a what-if draws the time it worked since its
// last step, waiting until the bucket has it. The bucket holds paceBurst, so a what-if
// that takes less than that when none other ran recently never waits.
type Pacer struct {
	bucket *rate.Limiter
}

// paceBurst is the work, in milliseconds, that the bucket holds when it is full; a
// what-if draws at most that at once.
const paceBurst = 100

// NewPacer paces what-ifs to share of one CPU; nil (no pacing) for 0.
func NewPacer(share float64) *Pacer {
	if share <= 0 {
		return nil
	}
	return &Pacer{bucket: rate.NewLimiter(rate.Limit(share*1000), paceBurst)}
}

// pace returns the Pace of one what-if, whose request is ctx: nil for no pacing. It
// must be called on the what-if's goroutine only.
func (p *Pacer) Pace(ctx context.Context) func() {
	if p == nil {
		return nil
	}
	last, owed := time.Now(), time.Duration(0)
	return func() {
		owed += time.Since(last)
		owed = p.draw(ctx, owed)
		last = time.Now() // waiting is not work
	}
}

// draw waits until the bucket has worked, in whole milliseconds, and returns what is
// left to draw (under a millisecond). When ctx ends first, or would end before the
// bucket has it, it returns at ctx's end: the what-if stops then, with no time left to
// work in.
func (p *Pacer) draw(ctx context.Context, worked time.Duration) time.Duration {
	for worked >= time.Millisecond {
		n := min(int(worked/time.Millisecond), paceBurst)
		if err := p.bucket.WaitN(ctx, n); err != nil {
			<-ctx.Done()
			return worked
		}
		worked -= time.Duration(n) * time.Millisecond
	}
	return worked
}
