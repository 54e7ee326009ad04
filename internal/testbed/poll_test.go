package testbed

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalTB records the Fatalf a Poll gives instead of failing the test.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// pollFor runs PollEvery as a test would and returns how often it asked cond and the
// failure it gave ("" for none).
func pollFor(t *testing.T, timeout time.Duration, cond func(calls int) (bool, error)) (int, string) {
	tb := &fatalTB{TB: t}
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		PollEvery(tb, time.Millisecond, timeout, "the thing", func(context.Context) (bool, error) {
			calls++
			return cond(calls)
		})
	}()
	<-done
	return calls, tb.fatal
}

func TestPoll(t *testing.T) {
	t.Run("done on the third call", func(t *testing.T) {
		calls, fatal := pollFor(t, time.Minute, func(n int) (bool, error) { return n == 3, nil })
		if calls != 3 || fatal != "" {
			t.Errorf("%d calls, failure %q; want 3 calls and no failure", calls, fatal)
		}
	})
	t.Run("NotYet keeps polling", func(t *testing.T) {
		calls, fatal := pollFor(t, time.Minute, func(n int) (bool, error) {
			return n == 3, NotYet(fmt.Errorf("call %d", n))
		})
		if calls != 3 || fatal != "" {
			t.Errorf("%d calls, failure %q; want 3 calls and no failure", calls, fatal)
		}
	})
	t.Run("another error fails at once", func(t *testing.T) {
		calls, fatal := pollFor(t, time.Minute, func(int) (bool, error) { return false, errors.New("broken") })
		if calls != 1 || !strings.Contains(fatal, "the thing") || !strings.Contains(fatal, "broken") {
			t.Errorf("%d calls, failure %q; want 1 call and a failure naming the thing and the error", calls, fatal)
		}
	})
	t.Run("the timeout names the last reason", func(t *testing.T) {
		_, fatal := pollFor(t, 20*time.Millisecond, func(n int) (bool, error) {
			return false, NotYet(fmt.Errorf("reason %d", n))
		})
		if !strings.Contains(fatal, "the thing") || !strings.Contains(fatal, "last: reason ") {
			t.Errorf("failure %q; want one naming the thing and the last reason", fatal)
		}
	})
	if NotYet(nil) != nil {
		t.Error("NotYet(nil) is not nil")
	}
}
