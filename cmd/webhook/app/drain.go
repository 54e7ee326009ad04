package app

import (
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// DefaultShutdownDrain is how long the webhook keeps answering after it is told to
// stop (--shutdown-drain).
const DefaultShutdownDrain = 3 * time.Second

// errDraining is what /readyz reports while the webhook drains.
var errDraining = errors.New("the webhook is shutting down")

// drain is the first step of the webhook's shutdown. The API server keeps its HTTP/1.1
// connections to the webhook alive between calls, and a server that closes an idle one
// can cross a request the API server is sending on it: the API server does not retry a
// POST that met a closed connection, and failurePolicy Fail turns that into a failed
// pod create. So for a while after SIGTERM the webhook goes on answering, each answer
// with Connection: close, which tells the API server not to send on that connection
// again: the connections that carry calls move to a webhook that is not stopping, and
// only connections left unused for the whole drain are still open when the server
// shuts down. /readyz fails meanwhile.
type drain struct {
	started atomic.Bool
}

// wrap answers with Connection: close once the drain has started.
func (d *drain) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.started.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// ready wraps a readiness check: it fails once the drain has started.
func (d *drain) ready(check func(*http.Request) error) func(*http.Request) error {
	return func(r *http.Request) error {
		if d.started.Load() {
			return errDraining
		}
		return check(r)
	}
}

// run starts the drain and returns after period.
func (d *drain) run(period time.Duration) {
	d.started.Store(true)
	time.Sleep(period)
}
