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

// With two ready backends, new connections alternate between them; one that stops
// listening is passed over until it is removed, as a Service's endpoints would be.
func TestServiceSpreadsConnectionsAndPassesOverADeadBackend(t *testing.T) {
	backend := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, name) }))
		t.Cleanup(s.Close)
		return s
	}
	a, b := backend("a"), backend("b")
	svc, err := listenService("visibility API")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.close() })
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() string {
		resp, err := client.Get("http://" + svc.addr())
		if err != nil {
			return "error: " + err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	addrA, addrB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	svc.route(addrA)
	svc.add(addrB)
	seen := map[string]int{}
	for range 4 {
		seen[get()]++
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Errorf("4 connections over two backends went %v, want 2 each", seen)
	}
	a.Close()
	for range 3 {
		if got := get(); got != "b" {
			t.Errorf("backend a stopped: got %q, want b", got)
		}
	}
	svc.remove(addrB)
	if got := get(); !strings.HasPrefix(got, "error") {
		t.Errorf("with backend b removed and a stopped: got %q, want the connection refused", got)
	}
}
