// Package localinstall installs quotagate onto a local control plane
// (test/localcluster) the way a user's cluster runs it: the packaged Helm chart (after
// cert-manager's CRDs, when the values choose cert-manager) with the Helm v4 SDK (the
// working tree's charts/quotagate packaged into quotagate-<version>.tgz by PackageChart,
// as `helm package` does, or the archive Options.ChartPath names), then the webhook and the manager as processes on this
// machine under the chart's own ServiceAccount identities, so that the chart's RBAC, its
// gate guard and its webhook configuration are what gets exercised. The e2e tests and
// `make demo` both use it.
//
// kwok nodes run no containers: the chart's Deployments get pods that kwok reports as
// Running, but nothing runs in them. Three things stand in for what a real cluster
// would do:
//
//   - By default (the chart's certManager.enabled=false; SelfManagedCerts) no
//     cert-manager: the manager's own rotator issues the certificate and injects the
//     caBundle under the chart's RBAC. Only the kubelet's Secret volume is stood in for
//     (selfmanaged.go): the Secret is copied into the cert dir that the webhook and the
//     manager share whenever it changes. The rotator's certificate has DNS names only,
//     so the webhook URL names localhost and the manager gets
//     --webhook-cert-extra-dns-names=localhost.
//   - With certManager.enabled=true, cert-manager's controllers are not here (their
//     binaries are separate modules), so Install issues the chart's Certificates
//     itself, each through the Issuer it names (the self-signed Issuer signs the CA, the CA Issuer signs the serving certificate
//     with the CA's Secret), writes the webhook's Secret into its cert dir as the kubelet
//     updates a Secret volume, and copies the CA into the MutatingWebhookConfiguration's
//     caBundle the way cert-manager's CA injector does (following the
//     cert-manager.io/inject-ca-from annotation). RenewWebhookCert renews the serving
//     certificate as cert-manager would at renewBefore.
//   - The webhook process listens on 127.0.0.1, which the API server cannot reach
//     through the chart's Service, so a Helm post-renderer replaces the webhook's
//     clientConfig.service with clientConfig.url pointing at a local stand-in for the
//     Service (service.go), which forwards each connection to the webhook process that is
//     ready. Doing it in the post-renderer (not with a patch after install) keeps it
//     across `helm upgrade`.
//   - The chart's pre-delete hook Job runs `manager release --all --webhook-configuration
//     <release>-webhook`. kwok would mark its pod Succeeded without running anything, so
//     the post-renderer tells kwok never to complete it, and Uninstall runs the same
//     command as a process under the pod's ServiceAccount (bound, while the hook runs, to
//     the hook's ClusterRole), then reports the exit code in the pod's status as a
//     kubelet would.
//     Helm's uninstall waits for the Job as it would in a real cluster.
//
// Upgrade and UpgradeTo are `helm upgrade`, to the same chart with other values or to
// another packaged chart with that version's binaries (the images a real upgrade pulls),
// with the same post-renderer. Then, as cert-manager would, a Certificate that did not
// change keeps its Secret (one that did is issued again) and the caBundle is injected
// again; and each component whose binary or arguments changed rolls out as its
// Deployment would: the new process starts on new local ports, becomes ready (the
// webhook's Service then sends new connections to it), and only then is the old one
// stopped, so pod creates keep passing the webhook; the manager's leader election hands
// over when the old manager releases its Lease.
//
// Each process logs to <Dir>/<name>.log; a process that exits while it should run is
// reported by Err with its log tail, and Stop kills them all.
package localinstall
