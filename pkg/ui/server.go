package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// WhyFunc explains one pod as `kubectl quotagate why` prints it.
type WhyFunc func(ctx context.Context, namespace, name string) (string, error)

// Options configure a Server.
type Options struct {
	// Config is the user's rest config: every read is made with it.
	Config *rest.Config
	// Namespace is the namespace the page is for; "" means every namespace (-A).
	Namespace string
	// Why explains a pod on its page; nil leaves the explanation out.
	Why WhyFunc
	// Coalesce is the least time between two pushes of a view; 0 means 200 ms.
	Coalesce time.Duration
	// Refresh pushes every view again after this long without a change, so that
	// waiting times stay current; 0 means 15 s.
	Refresh time.Duration
	// Token is the secret every request must carry; empty means a random one.
	Token string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server serves the page. Create it with New, then Run it.
type Server struct {
	o      Options
	scheme *runtime.Scheme
	direct client.Client
	pages  queuePage
	// podStatus reads a gated pod's place and estimated start.
	podStatus podStatusReader
	tmpl      *template.Template
	notifier  *notifier
	store     *store
	// hosts are the Host headers accepted, set by Run from the listener; nil accepts
	// any (a listener that is not on loopback: the token alone guards it).
	hosts map[string]bool
	// cookie is the name of the cookie that keeps the token, unique per port: browsers
	// send localhost cookies to every port.
	cookie string
}

// New prepares a Server: clients with the user's rest config, the templates and the
// token. It contacts nothing yet.
func New(o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("ui: Options.Config is required")
	}
	if o.Coalesce == 0 {
		o.Coalesce = 200 * time.Millisecond
	}
	if o.Refresh == 0 {
		o.Refresh = 15 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Token == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("making the token: %w", err)
		}
		o.Token = base64.RawURLEncoding.EncodeToString(b)
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return nil, fmt.Errorf("registering types: %w", err)
	}
	direct, err := client.New(o.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	rc := cs.CoreV1().RESTClient()
	return &Server{o: o, scheme: scheme, direct: direct, pages: visibilityPages(rc), podStatus: visibilityPodStatus(rc),
		tmpl: tmpl, notifier: newNotifier()}, nil
}

// Token is the secret the URL carries.
func (s *Server) Token() string { return s.o.Token }

// Run starts the watches, waits until they have synced, calls ready with the page's
// URL (token included), and serves on ln until ctx ends.
func (s *Server) Run(ctx context.Context, ln net.Listener, ready func(url string)) error {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("ui: listener on %s is not TCP", ln.Addr())
	}
	port := strconv.Itoa(addr.Port)
	s.cookie = "quotagate-ui-" + port
	if addr.IP.IsLoopback() {
		s.hosts = map[string]bool{}
		for _, h := range []string{"localhost", "127.0.0.1", "[::1]", hostOf(addr)} {
			s.hosts[h+":"+port] = true
		}
	}
	st, err := startWatches(ctx, &s.o, s.scheme, s.notifier)
	if err != nil {
		return err
	}
	s.store = st
	go s.notifier.run(ctx, s.o.Coalesce, s.o.Refresh)

	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready(s.URL(addr))
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		return nil
	}
}

func hostOf(addr *net.TCPAddr) string {
	if addr.IP.To4() == nil {
		return "[" + addr.IP.String() + "]"
	}
	return addr.IP.String()
}

// URL is the page's address on addr, with the token.
func (s *Server) URL(addr *net.TCPAddr) string {
	host := hostOf(addr)
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + host + ":" + strconv.Itoa(addr.Port) + "/?token=" + s.o.Token
}

// Handler is the server's HTTP handler: the views, the event stream and the assets,
// behind the Host and token checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(staticFS())))
	mux.HandleFunc("GET /events", s.serveEvents)
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /pods", s.servePage)
	mux.HandleFunc("GET /pods/{ns}/{name}", s.servePage)
	mux.HandleFunc("GET /budgets/{ns}/{name}", s.servePage)
	mux.HandleFunc("GET /clusterbudgets/{name}", s.servePage)
	return s.guard(mux)
}

// guard refuses requests that could come from another site: a Host header that does
// not name this loopback server (DNS rebinding), and any request without the token (a
// query parameter, which it then keeps in a cookie, or that cookie). It sets the
// headers that keep the page from being framed or its assets from being sniffed.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if s.hosts != nil && !s.hosts[r.Host] {
			http.Error(w, "This server answers only to its loopback address (Host "+r.Host+" refused).", http.StatusMisdirectedRequest)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/static/") {
			next.ServeHTTP(w, r)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" {
			if !s.validToken(t) {
				s.refuse(w)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.o.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			// The same view without the token: it leaves the address bar and history.
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if c, err := r.Cookie(s.cookie); err != nil || !s.validToken(c.Value) {
			s.refuse(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) validToken(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.o.Token)) == 1
}

func (s *Server) refuse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = fmt.Fprintln(w, "This page needs the token that `kubectl quotagate ui` printed: open the whole URL it printed (http://127.0.0.1:PORT/?token=...).")
}
