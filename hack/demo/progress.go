package main

import (
	"fmt"
	"io"
	"time"
)

// heartbeat is how often a long step says that it is still running: a cold build of
// the webhook and manager takes minutes on two cores, and a silent terminal looks hung.
var heartbeat = 15 * time.Second

// during runs f, a step that may take long, and writes to w every heartbeat that what is
// still running and for how long, then how long it took. It returns f's error.
func during(w io.Writer, what string, f func() error) error {
	start := time.Now()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				fmt.Fprintf(w, "%s      %s: still running, %v so far\n", now.Format(clock), what, now.Sub(start).Round(time.Second))
			}
		}
	}()
	err := f()
	close(done)
	<-stopped
	if err == nil {
		fmt.Fprintf(w, "%s      %s: done in %v\n", time.Now().Format(clock), what, time.Since(start).Round(100*time.Millisecond))
	}
	return err
}
