// Package app wires quotagate's webhook binary: flags, the zap logger, and
// three servers that run until the context ends.
//
//   - the webhook server (TLS 1.2+, certificate files reloaded when they
//     change, as cert-manager rotates them) serving admission.PodGater at
//     admission.Path;
//   - the metrics server (controller-runtime's registry: quotagate_webhook_*
//     and controller_runtime_webhook_*);
//   - the health server: /healthz, and /readyz, which passes only once the
//     webhook server completes TLS handshakes with its certificate. The webhook
//     server starts only once tls.crt and tls.key are in the cert dir: with a
//     self-managed certificate (docs/certificates.md) the Secret volume starts
//     empty until the manager has issued it.
//
// There is no manager, cache or client: the webhook never reads the API
// server, so it needs no RBAC. On shutdown each server stops accepting
// connections and waits for the requests in flight to finish.
package app
