package ui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func guarded(t *testing.T) http.Handler {
	t.Helper()
	s := &Server{o: Options{Token: "s3cret"}, cookie: "quotagate-ui-8089",
		hosts: map[string]bool{"127.0.0.1:8089": true, "localhost:8089": true}}
	return s.guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the page")) }))
}

func TestGuard(t *testing.T) {
	tests := map[string]struct {
		host, target, cookie string
		wantStatus           int
		wantLocation         string
		wantBody             string
	}{
		"no token":                {host: "127.0.0.1:8089", target: "/", wantStatus: http.StatusUnauthorized},
		"wrong token":             {host: "127.0.0.1:8089", target: "/?token=guess", wantStatus: http.StatusUnauthorized},
		"wrong cookie":            {host: "127.0.0.1:8089", target: "/", cookie: "guess", wantStatus: http.StatusUnauthorized},
		"token: cookie, redirect": {host: "127.0.0.1:8089", target: "/pods?q=x&token=s3cret", wantStatus: http.StatusSeeOther, wantLocation: "/pods?q=x"},
		"cookie":                  {host: "localhost:8089", target: "/pods", cookie: "s3cret", wantStatus: http.StatusOK, wantBody: "the page"},
		"DNS rebinding: another host with the token": {host: "evil.example:8089", target: "/?token=s3cret", cookie: "s3cret", wantStatus: http.StatusMisdirectedRequest},
		"another port":         {host: "127.0.0.1:9999", target: "/", cookie: "s3cret", wantStatus: http.StatusMisdirectedRequest},
		"assets need no token": {host: "127.0.0.1:8089", target: "/static/app.js", wantStatus: http.StatusOK, wantBody: "the page"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.target, nil)
			req.Host = tc.host
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: "quotagate-ui-8089", Value: tc.cookie})
			}
			rec := httptest.NewRecorder()
			guarded(t).ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d (body %q)", rec.Code, tc.wantStatus, rec.Body.String())
			}
			if got := rec.Header().Get("Location"); got != tc.wantLocation {
				t.Errorf("Location %q, want %q", got, tc.wantLocation)
			}
			if tc.wantBody != "" && rec.Body.String() != tc.wantBody {
				t.Errorf("body %q, want %q", rec.Body.String(), tc.wantBody)
			}
			if tc.wantStatus == http.StatusSeeOther {
				c := rec.Result().Cookies()
				if len(c) != 1 || c[0].Name != "quotagate-ui-8089" || c[0].Value != "s3cret" || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
					t.Errorf("cookies %+v, want one HttpOnly SameSite=Strict quotagate-ui-8089=s3cret", c)
				}
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
		})
	}
}

// TestNotifierCoalesces: a burst of changes is one push; changes during the interval
// wait for its end.
func TestNotifierCoalesces(t *testing.T) {
	n := newNotifier()
	ctx := t.Context()
	go n.run(ctx, time.Hour, time.Hour)
	for range 1000 {
		n.markDirty()
	}
	waitVersion := func(want uint64) {
		t.Helper()
		for {
			v, changed := n.current()
			if v >= want {
				return
			}
			<-changed
		}
	}
	waitVersion(1)
	for range 1000 {
		n.markDirty()
	}
	if v, _ := n.current(); v != 1 {
		t.Errorf("version %d after two bursts within one interval, want 1 (the second waits for the interval's end)", v)
	}
}
