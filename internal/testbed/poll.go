package testbed

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// pollT is the part of testing.TB that Poll uses: an interface, so that this non-test
// file does not import testing (`make verify` checks it).
type pollT interface {
	Helper()
	Fatalf(format string, args ...any)
}

// PollInterval is how often Poll asks its condition.
const PollInterval = 100 * time.Millisecond

// Poll asks cond every PollInterval, the first time at once, until it returns true, and
// fails the test naming what when timeout passes first or when cond returns an error
// that NotYet did not make. A NotYet error is cond's reason for not being done; Poll
// keeps polling and names the last such reason when it times out.
func Poll(t pollT, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	PollEvery(t, PollInterval, timeout, what, cond)
}

// PollEvery is Poll asking every interval, for moments that pass quickly.
func PollEvery(t pollT, interval, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	// Not t.Context(): Poll also runs in t.Cleanup, after t.Context() is done.
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(ctx context.Context) (bool, error) {
		done, err := cond(ctx)
		if errors.As(err, new(notYet)) {
			last = err
			return done, nil
		}
		return done, err
	})
	switch {
	case err == nil:
	case last != nil:
		t.Fatalf("Waiting %v for %s: %v; last: %v", timeout, what, err, last)
	default:
		t.Fatalf("Waiting %v for %s: %v", timeout, what, err)
	}
}

// NotYet marks err, when it is not nil, as a Poll condition's reason for not being done
// yet: Poll keeps polling, and names the last reason if it times out.
func NotYet(err error) error {
	if err == nil {
		return nil
	}
	return notYet{err}
}

type notYet struct{ err error }

func (n notYet) Error() string { return n.err.Error() }
func (n notYet) Unwrap() error { return n.err }
