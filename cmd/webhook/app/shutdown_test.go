package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/quotagate/quotagate/internal/testbed"

	"k8s.io/apimachinery/pkg/util/wait"
)

// How the webhook stops: what it answers after SIGTERM, and when it stops answering.

// A request in flight when shutdown starts gets its answer.
func TestServeDrainsInFlightRequests(t *testing.T) {
	certDir := t.TempDir()
	caPEM := writeCert(t, certDir, "gen1")
	o := testOptions(t, certDir)
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	cancel, served := serveInBackground(t, o, map[string]http.Handler{"/slow": slow})
	waitReady(t, o)

	answered := make(chan string, 1)
	go func() {
		resp, err := tlsClient(caPEM, 0).Get(fmt.Sprintf("https://127.0.0.1:%d/slow", o.Port))
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- string(b)
	}()
	<-entered
	cancel()
	// New connections are refused once shutdown has begun, while the slow
	// request is still being served.
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)))
			if err == nil {
				c.Close()
			}
			return err != nil, nil
		})
	if err != nil {
		t.Fatalf("the webhook port still accepts connections after shutdown began: %v", err)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve() returned %v while a request was in flight", err)
	default:
	}
	close(release)
	if got := <-answered; got != "done" {
		t.Errorf("in-flight request got %q, want %q", got, "done")
	}
	if err := <-served; err != nil {
		t.Errorf("Serve() = %v, want nil", err)
	}
}

// The API server keeps its connection to the webhook alive between calls. After
// SIGTERM a call it sends on that connection is answered, telling it to close the
// connection, /readyz fails, and the server stops once the drain is over. Without the
// drain the server would close the idle connection at once and the call would fail.
func TestServeDrainsKeptAliveConnections(t *testing.T) {
	certDir := t.TempDir()
	caPEM := writeCert(t, certDir, "gen1")
	o := testOptions(t, certDir)
	// Long enough for the checks below on a loaded machine; the test waits it out.
	o.ShutdownDrain = 10 * time.Second
	cancel, served := serveInBackground(t, o, nil)
	waitReady(t, o)
	c := tlsClient(caPEM, 0)
	if _, reused, closing := postPodTraced(t, c, o); reused || closing {
		t.Fatalf("the first call: reused a connection %v, asked to close it %v; want a new one kept alive", reused, closing)
	}
	cancel()

	readyz := "http://" + o.HealthProbeBindAddress + "/readyz"
	testbed.PollEvery(t, 50*time.Millisecond, 10*time.Second, "/readyz to fail once the drain began", func(context.Context) (bool, error) {
		resp, err := http.Get(readyz)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusInternalServerError || resp.StatusCode == http.StatusServiceUnavailable,
			testbed.NotYet(errors.New(resp.Status))
	})
	_, reused, closing := postPodTraced(t, c, o)
	if !reused {
		t.Errorf("the call after SIGTERM went on a new connection; want the kept one, as the API server sends it")
	}
	if !closing {
		t.Errorf("the answer after SIGTERM does not ask the client to close the connection")
	}
	if err := <-served; err != nil {
		t.Errorf("Serve() = %v, want nil", err)
	}
}
