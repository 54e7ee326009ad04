// Package certrotation manages the webhook's serving certificate when cert-manager does
// not (the chart's certManager.enabled=false), with open-policy-agent/cert-controller's
// rotator, the library Kueue and Gatekeeper use for the same job.
//
// It runs in the manager, on the elected leader only: the manager already has an API
// client, RBAC and leader election, while the webhook has no client and stays that way.
// The leader keeps a CA (ca.crt, ca.key) and a serving certificate signed by it (tls.crt,
// tls.key) in one Secret of the release namespace, which the chart creates empty; it puts
// the CA into the caBundle of the MutatingWebhookConfiguration, and issues a new serving
// certificate before the old one expires (the CA stays, so the caBundle does not change).
// If the Secret is emptied or the CA nears its end, it issues a new CA and certificate
// and injects the new CA; if the Secret is deleted, a keeper (secretKeeper) creates it
// again, empty, and the rotator fills it the same way.
// cert-controller verifies the certificate for its first DNS name only, so when the
// leader starts, a check (nameCheck) removes a serving certificate that lacks one of the
// wanted names, and the rotator issues one for them all from the same CA: a release that
// adds a name (the visibility API's Service) gets it at the upgrade, not at expiry.
//
// The webhook replicas mount tls.crt, tls.key and ca.crt of that Secret as a volume (not
// ca.key: a webhook pod never holds the key that could sign another certificate), and
// reload the files when the kubelet updates them (controller-runtime's certwatcher). The
// manager mounts it too: cert-controller counts the certificate as delivered once the
// files appear in its cert dir.
//
// Reads are scoped by name: the rotator's informers list and watch only its Secret and
// its webhook configuration (a field selector on metadata.name, added to each list and
// watch request), so its RBAC is limited to those objects by resourceNames. Config can
// name more objects to inject the CA into, such as an APIService.
package certrotation
