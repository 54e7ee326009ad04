package faultproxy

import (
	"fmt"
	"net/http"
	"strings"
)

// Fault is what the proxy does to one request instead of passing it through.
type Fault int

// The faults, in the order Stats prints them. None passes the request through.
const (
	None Fault = iota
	DropResponse
	DelayResponse
	ResetAfterForward
	TooManyRequests
	InternalError
	Unavailable
	GatewayTimeout
	ResetConnection
)

// Faults lists every fault the proxy can inject (every Fault but None).
var Faults = []Fault{DropResponse, DelayResponse, ResetAfterForward, TooManyRequests, InternalError, Unavailable, GatewayTimeout, ResetConnection}

var faultNames = map[Fault]string{
	None:              "None",
	DropResponse:      "DropResponse",
	DelayResponse:     "DelayResponse",
	ResetAfterForward: "ResetAfterForward",
	TooManyRequests:   "TooManyRequests",
	InternalError:     "InternalError",
	Unavailable:       "Unavailable",
	GatewayTimeout:    "GatewayTimeout",
	ResetConnection:   "ResetConnection",
}

func (f Fault) String() string {
	if n, ok := faultNames[f]; ok {
		return n
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// forwards reports whether the API server receives the request under this fault.
func (f Fault) forwards() bool {
	switch f {
	case None, DropResponse, DelayResponse, ResetAfterForward:
		return true
	}
	return false
}

// statusCode is the HTTP status the proxy answers with in place of the API server, or 0.
func (f Fault) statusCode() int {
	switch f {
	case TooManyRequests:
		return http.StatusTooManyRequests
	case InternalError:
		return http.StatusInternalServerError
	case Unavailable:
		return http.StatusServiceUnavailable
	case GatewayTimeout:
		return http.StatusGatewayTimeout
	}
	return 0
}

// Matcher selects the requests the proxy may fault.
type Matcher func(*http.Request) bool

// PodPatches matches PATCH of a pod itself (not of a subresource such as status): the
// requests with which quotagate's manager removes the scheduling gate.
func PodPatches(r *http.Request) bool {
	return r.Method == http.MethodPatch && isObject(r.URL.Path, "/api/v1/namespaces/", "pods")
}

// LeaseWrites matches the updates and patches of coordination.k8s.io Leases with which
// a leader renews its lease.
func LeaseWrites(r *http.Request) bool {
	return (r.Method == http.MethodPut || r.Method == http.MethodPatch) &&
		isObject(r.URL.Path, "/apis/coordination.k8s.io/v1/namespaces/", "leases")
}

// Everything matches every request (watches still stream untouched).
func Everything(*http.Request) bool { return true }

// AnyOf matches a request that any of ms matches.
func AnyOf(ms ...Matcher) Matcher {
	return func(r *http.Request) bool {
		for _, m := range ms {
			if m(r) {
				return true
			}
		}
		return false
	}
}

// isObject reports whether path is <prefix><namespace>/<resource>/<name>, one object of
// a namespaced resource without a subresource.
func isObject(path, prefix, resource string) bool {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 3 && parts[0] != "" && parts[1] == resource && parts[2] != ""
}

// isWatch reports whether r is a watch, which the proxy always streams untouched.
func isWatch(r *http.Request) bool {
	if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
		return true
	}
	return strings.HasPrefix(r.URL.Path, "/api/v1/watch/") ||
		(strings.HasPrefix(r.URL.Path, "/apis/") && strings.Contains(r.URL.Path, "/watch/"))
}
