package localinstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v4/pkg/action"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/supervise"
)

// Installation is quotagate installed on a local control plane, with its webhook and
// manager running as processes. Its methods are not safe for concurrent use, except Err.
type Installation struct {
	cluster  *localcluster.Cluster
	opts     Options
	values   map[string]any
	client   kubernetes.Interface
	dynamic  dynamic.Interface
	helm     *action.Configuration
	helmLog  *os.File
	renderer localRenderer
	// chartPath is the packaged chart the release runs; svc is the webhook's Service
	// and visSvc the visibility API's (service.go).
	chartPath   string
	svc, visSvc *service

	webhook, manager *component
	// replicas are manager processes added by AddManagerReplica.
	replicas []*component
	// servingCert and webhookConfiguration name the release's serving Certificate and
	// MutatingWebhookConfiguration, for RenewWebhookCert; apiService is the visibility
	// API's APIService, "" when the release does not serve it.
	servingCert, webhookConfiguration, apiService string
	// mode is the release's admission mode: AdmissionPolicy, AdmissionWebhook or
	// AdmissionSwitching.
	mode string
	// certSecret is the webhook's Secret; volume copies it into the cert dir when the
	// manager manages the certificate (selfmanaged.go).
	certSecret string
	volume     *secretVolume
	// selfManaged: the chart's certManager.enabled is false, and the manager issues the
	// serving certificate (selfmanaged.go).
	selfManaged bool

	// stops are the processes upgrades stopped (ProcessStops).
	stopsMu sync.Mutex
	stops   []ProcessStop

	stopOnce sync.Once
	stopErr  error
}

// stopGrace is how long a process gets to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// ExitError reports a quotagate process ("webhook", "manager" or "release-hook") that
// exited while it should have been running, or failed: how it ended and the end of its
// log.
type ExitError = supervise.ExitError

// Install installs quotagate onto c (see the package comment) and returns once the
// webhook and the manager answer /readyz. On error, the processes it started are
// stopped; the Helm release, if created, is left for the cluster to be thrown away.
func Install(ctx context.Context, c *localcluster.Cluster, opts Options) (*Installation, error) {
	log := logr.FromContextOrDiscard(ctx)
	o, err := opts.withDefaults(c)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", o.Dir, err)
	}
	if opts.BinDir == "" {
		log.V(1).Info("Building the webhook and manager", "dir", o.BinDir)
		if err := BuildBinaries(ctx, o.RepoRoot, o.BinDir); err != nil {
			return nil, err
		}
	}
	i := &Installation{cluster: c, opts: o, values: o.Values}
	if i.chartPath, err = chartToInstall(o); err != nil {
		return nil, err
	}
	if i.selfManaged, err = selfManagedCerts(i.chartPath, o.Values); err != nil {
		return nil, err
	}
	if i.client, err = kubernetes.NewForConfig(c.Config()); err != nil {
		return nil, err
	}
	if i.dynamic, err = dynamic.NewForConfig(c.Config()); err != nil {
		return nil, err
	}
	if i.helm, i.helmLog, err = helmConfig(c.KubeconfigPath(), o.Namespace, o.Dir); err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(6)
	if err != nil {
		return nil, err
	}
	i.webhook = &component{name: webhookName, port: ports[0], metrics: ports[1], probes: ports[2]}
	i.manager = &component{name: managerName, metrics: ports[3], probes: ports[4], visibility: ports[5]}
	if i.svc, err = listenService("webhook"); err != nil {
		return nil, err
	}
	if i.visSvc, err = listenService("visibility API"); err != nil {
		return nil, errors.Join(err, i.svc.close())
	}
	i.renderer = localRenderer{webhookHost: i.webhookHost(), visibilityPort: int64(i.visSvc.portNumber())}

	if err := i.install(ctx); err != nil {
		return nil, errors.Join(err, i.Stop())
	}
	return i, nil
}

func (i *Installation) install(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	selfManaged := i.selfManaged
	if !selfManaged {
		if err := i.installCertManagerCRDs(ctx); err != nil {
			return err
		}
		log.V(1).Info("Installed cert-manager's CRDs")
	}
	rel, err := i.helmApply(ctx, i.chartPath, i.values)
	if err != nil {
		return err
	}
	log.V(1).Info("Installed the chart", "release", rel.Name, "namespace", rel.Namespace, "revision", rel.Version)
	objs, err := releaseObjects(rel)
	if err != nil {
		return err
	}
	i.mode = admissionModeOf(objs)
	if selfManaged {
		err = i.wireSelfManagedCert(objs)
	} else {
		err = i.issueCertificates(ctx, objs)
		if err == nil {
			err = i.wireIssuedCert(ctx, objs)
		}
	}
	if err != nil {
		return err
	}
	// In self-managed mode the manager's rotator writes the certificate the webhook
	// serves with, so the manager starts first.
	comps := []*component{i.webhook, i.manager}
	switch {
	case i.mode == AdmissionPolicy:
		comps = []*component{i.manager}
	case selfManaged:
		comps = []*component{i.manager, i.webhook}
	}
	for _, comp := range comps {
		if err := i.configure(ctx, comp, objs); err != nil {
			return err
		}
		if err := i.start(ctx, comp); err != nil {
			return err
		}
		log.V(1).Info("Started", "component", comp.name, "log", comp.logPath)
	}
	if i.mode != AdmissionWebhook {
		if err := i.waitPolicyApplied(ctx); err != nil {
			return err
		}
	} else if selfManaged {
		if err := i.waitCABundle(ctx); err != nil {
			return err
		}
	}
	return i.waitVisibilityAvailable(ctx)
}

// servingSecret is the Secret with the release's serving certificate, as the
// webhook's or the manager's pod mounts it; "" when the release has no certificate
// (admission policy without the visibility API).
func servingSecret(objs []*unstructured.Unstructured) string {
	for _, name := range []string{webhookName, managerName} {
		if dep, err := deployment(objs, name); err == nil {
			if s := servingSecretOf(dep); s != "" {
				return s
			}
		}
	}
	return ""
}

// wireIssuedCert does, for the release's objects, what the kubelet and cert-manager's CA
// injector do with an issued serving certificate: its Secret into the cert dir of the
// webhook and the manager (and kept there), its CA into the caBundle of the webhook
// configuration and of the visibility APIService.
func (i *Installation) wireIssuedCert(ctx context.Context, objs []*unstructured.Unstructured) error {
	secretName := servingSecret(objs)
	if secretName == "" {
		return nil
	}
	i.certSecret = secretName
	var err error
	if i.servingCert, err = certificateFor(objs, secretName); err != nil {
		return err
	}
	if err := i.syncCertDir(ctx, i.opts.Namespace, secretName, i.certDir()); err != nil {
		return err
	}
	i.nameCAInjectionTargets(objs)
	if i.webhookConfiguration != "" {
		if err := i.injectCABundle(ctx, i.webhookConfiguration); err != nil {
			return err
		}
	}
	if i.apiService != "" {
		return i.injectAPIServiceCABundle(ctx, i.apiService)
	}
	return nil
}

// nameCAInjectionTargets records the release's objects whose caBundle the serving
// certificate's CA goes into: its webhook configuration and its APIService ("" for one
// the release does not have).
func (i *Installation) nameCAInjectionTargets(objs []*unstructured.Unstructured) {
	i.webhookConfiguration = nameOf(objs, "admissionregistration.k8s.io", "MutatingWebhookConfiguration")
	i.apiService = nameOf(objs, "apiregistration.k8s.io", "APIService")
}

// wireSelfManagedCert starts the kubelet's stand-in for the Secret the manager's
// rotator writes (selfmanaged.go), when the release has a certificate.
func (i *Installation) wireSelfManagedCert(objs []*unstructured.Unstructured) error {
	i.nameCAInjectionTargets(objs)
	secretName := servingSecret(objs)
	if secretName == "" || i.volume != nil {
		return nil
	}
	i.certSecret = secretName
	i.volume = startSecretVolume(i, i.opts.Namespace, secretName, i.certDir())
	return nil
}

func (i *Installation) certDir() string { return filepath.Join(i.opts.Dir, "webhook-certs") }

// servingSecretOf is the Secret the webhook Deployment mounts: its serving certificate.
func servingSecretOf(dep *appsv1.Deployment) string {
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

// certificateFor is the name of the release's Certificate that writes secretName.
func certificateFor(objs []*unstructured.Unstructured, secretName string) (string, error) {
	for _, o := range objs {
		if o.GetKind() != "Certificate" {
			continue
		}
		if s, _, _ := unstructured.NestedString(o.Object, "spec", "secretName"); s == secretName && s != "" {
			return o.GetName(), nil
		}
	}
	return "", fmt.Errorf("no Certificate of the release writes the webhook's Secret %q", secretName)
}

// Err returns an *ExitError for the webhook or manager if one has exited although Stop
// was not called, or nil.
func (i *Installation) Err() error {
	errs := []error{i.webhook.err(), i.manager.err(), i.volume.Err()}
	for _, r := range i.replicas {
		errs = append(errs, r.err())
	}
	return errors.Join(errs...)
}

// Stop stops the manager and the webhook processes; it does not touch the cluster.
// It is idempotent.
func (i *Installation) Stop() error {
	i.stopOnce.Do(func() {
		errs := []error{i.manager.stop()}
		for _, r := range i.replicas {
			errs = append(errs, r.stop())
		}
		i.stopErr = errors.Join(append(errs, i.webhook.stop(), i.svc.close(), i.visSvc.close())...)
		i.volume.stop()
		if i.helmLog != nil {
			_ = i.helmLog.Close()
		}
	})
	return i.stopErr
}

// Release and Namespace are the Helm release's name and namespace.
func (i *Installation) Release() string   { return i.opts.Release }
func (i *Installation) Namespace() string { return i.opts.Namespace }

// ManagerServiceAccount is the ServiceAccount the manager runs as.
func (i *Installation) ManagerServiceAccount() string { return i.manager.serviceAccount }

// ManagerUsername is the manager's identity as the API server sees it.
func (i *Installation) ManagerUsername() string {
	return "system:serviceaccount:" + i.opts.Namespace + ":" + i.manager.serviceAccount
}

// ManagerMetricsURL is the manager's /metrics; it is HTTPS with Kubernetes
// authentication and authorization when the chart's manager.metricsSecure is true.
func (i *Installation) ManagerMetricsURL() string {
	scheme := "http"
	if flagValue(i.manager.args, "metrics-secure") == "true" {
		scheme = "https"
	}
	return scheme + "://127.0.0.1:" + strconv.Itoa(i.manager.metrics) + "/metrics"
}

// WebhookAddress is where the API server reaches the webhook (host:port): its Service,
// which forwards to the webhook process that is ready now.
func (i *Installation) WebhookAddress() string { return i.svc.addr() }

// WebhookConfiguration is the name of the release's MutatingWebhookConfiguration.
func (i *Installation) WebhookConfiguration() string { return i.webhookConfiguration }

// WebhookMetricsURL is the webhook's /metrics (plain HTTP).
func (i *Installation) WebhookMetricsURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(i.webhook.metrics) + "/metrics"
}

// LogPaths are the log files of the webhook, the manager, the release hook and Helm.
func (i *Installation) LogPaths() []string {
	return []string{i.webhook.logPath, i.manager.logPath, i.hookLogPath(), filepath.Join(i.opts.Dir, "helm.log")}
}

// ManagerArgs is the manager's command line as it runs now.
func (i *Installation) ManagerArgs() []string { return slices.Clone(i.manager.args) }
