// Package faultproxy is a reverse proxy that sits between a Kubernetes client (in
// quotagate's tests, the manager) and kube-apiserver and injects the failures a real
// network and a loaded API server produce, so tests can prove what the client does when
// it cannot know whether a request took effect.
//
// For a share (Options.Rate) of the requests that Options.Match selects (by default,
// PATCH of a pod), the proxy injects one fault, drawn with Options.Weights from a
// generator seeded with Options.Seed:
//
//	DropResponse      forward, let the API server answer, then close the client's
//	                  connection without a byte of the answer: applied, response lost
//	DelayResponse     forward, then hold the answer for Options.Delay or until the
//	                  client gives up (its timeout): applied, answer late or never seen
//	ResetAfterForward forward, then reset the client's TCP connection (RST)
//	TooManyRequests   answer 429 without forwarding (an API server shedding load)
//	InternalError     answer 500 without forwarding
//	Unavailable       answer 503 without forwarding
//	GatewayTimeout    answer 504 without forwarding
//	ResetConnection   reset the client's TCP connection without forwarding
//
// Error answers carry a metav1.Status body, as the API server's do, so client-go turns
// them into the usual *errors.StatusError. By default they carry no Retry-After header,
// so client-go does not retry them on its own and the caller sees every one.
//
// Watches (?watch=true, or the legacy /watch/ paths) are never faulted and stream
// through as they come (httputil.ReverseProxy with FlushInterval -1): a test injects
// faults into writes, not into the informers that let the client find out what happened.
//
// The proxy serves HTTPS with a certificate for 127.0.0.1 from its own CA
// (test/pki; clients trust Proxy.CAPEM) and speaks HTTP/1.1 to the client, so that a
// fault can take the connection over and reset it. It forwards every header, the
// Authorization header included: the client authenticates to the API server with its
// own credentials (a ServiceAccount token, for the manager), and the proxy never holds
// any. Client certificates cannot pass through a TLS-terminating proxy: use a token.
//
// Stats counts each fault injected, so a test can report what it survived.
package faultproxy
