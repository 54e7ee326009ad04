package localinstall

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The webhook's Service sends each new connection to the process routed to last, so a
// rollout can start the new process, route to it, and stop the old one.
func TestServiceRoutesNewConnectionsToTheLatestBackend(t *testing.T) {
	backend := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, name) }))
		t.Cleanup(s.Close)
		return s
	}
	oldProc, newProc := backend("old"), backend("new")
	svc, err := listenService("webhook")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.close() })
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() (string, error) {
		resp, err := client.Get("http://" + svc.addr())
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	if _, err := get(); err == nil {
		t.Error("a request with no ready backend succeeded, want the connection closed")
	}
	svc.route(strings.TrimPrefix(oldProc.URL, "http://"))
	if got, err := get(); got != "old" || err != nil {
		t.Errorf("routed to the old process: got %q, %v", got, err)
	}
	svc.route(strings.TrimPrefix(newProc.URL, "http://"))
	oldProc.Close()
	for range 3 {
		if got, err := get(); got != "new" || err != nil {
			t.Errorf("routed to the new process, the old one stopped: got %q, %v", got, err)
		}
	}
}
