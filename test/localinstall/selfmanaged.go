package localinstall

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
)

// With the chart's certManager.enabled=false (docs/certificates.md) nothing emulates
// cert-manager: the manager's own rotator issues the certificate into the chart's Secret
// and injects the caBundle, under the manager's ServiceAccount and the chart's RBAC. The
// one stand-in left is the kubelet's Secret volume: secretVolume copies the Secret into the
// cert dir the webhook and the manager both read, whenever it changes.

// selfManagedHost is the host in the webhook configuration's URL in self-managed mode:
// the rotator's certificate carries DNS names only, so the API server reaches the
// process by a name (localinstall adds it with --webhook-cert-extra-dns-names).
const selfManagedHost = "localhost"

// secretSyncInterval is how often the emulated kubelet looks at the Secret; a real
// kubelet takes up to its sync period plus its cache TTL (about a minute).
const secretSyncInterval = 500 * time.Millisecond

// selfManagedCerts reports whether the packaged chart at chartPath, with values over its
// defaults, has quotagate manage the serving certificate itself (certManager.enabled
// false: this chart's default; older charts default to cert-manager).
func selfManagedCerts(chartPath string, values map[string]any) (bool, error) {
	chrt, err := loadPackagedChart(chartPath)
	if err != nil {
		return false, err
	}
	vals, err := chartutil.CoalesceValues(chrt, values)
	if err != nil {
		return false, fmt.Errorf("reading the values of %s: %w", chartPath, err)
	}
	cm, err := vals.Table("certManager")
	if err != nil {
		return false, fmt.Errorf("reading certManager of %s: %w", chartPath, err)
	}
	enabled, _ := cm["enabled"].(bool)
	return !enabled, nil
}

// SelfManagedCerts reports whether the release's serving certificate is quotagate's own
// (certManager.enabled=false), not cert-manager's.
func (i *Installation) SelfManagedCerts() bool { return i.selfManaged }

// selfManagedFlags are the manager's flags that point the rotator at the local cert dir
// and add the name the API server dials the webhook at to the names the chart's args
// (the manager's container args) ask for.
func (i *Installation) selfManagedFlags(set map[string]string, args []string) {
	set["webhook-cert-dir"] = i.certDir()
	names := selfManagedHost
	if extra := flagValue(args, "webhook-cert-extra-dns-names"); extra != "" {
		names = extra + "," + selfManagedHost
	}
	set["webhook-cert-extra-dns-names"] = names
}

// waitCABundle waits until every webhook of the configuration has a caBundle (at once
// without a webhook configuration).
func (i *Installation) waitCABundle(ctx context.Context) error {
	if i.webhookConfiguration == "" {
		return nil
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, i.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		mwc, err := i.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, i.webhookConfiguration, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, w := range mwc.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				last = "webhook " + w.Name + " has no caBundle"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the manager to inject the caBundle into %s (%s): %w; see %s", i.webhookConfiguration, last, err, i.manager.logPath)
	}
	return nil
}

// WebhookCertSecret is the Secret the webhook's certificate is in.
func (i *Installation) WebhookCertSecret() string {
	return i.certSecret
}

// webhookHost is the host and port of the webhook configuration's URL: the local
// stand-in for the webhook's Service, by the name its certificate carries.
func (i *Installation) webhookHost() string {
	return i.WebhookServerName() + ":" + i.svc.port()
}

// WebhookServerName is the name the API server checks the webhook's certificate against.
func (i *Installation) WebhookServerName() string {
	if i.selfManaged {
		return selfManagedHost
	}
	return "127.0.0.1"
}

// secretVolume stands in for the kubelet's Secret volume: it copies the Secret into dir
// (atomically, as the kubelet does) each time its data changes, until stopped.
type secretVolume struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error
}

func startSecretVolume(i *Installation, namespace, name, dir string) *secretVolume {
	ctx, cancel := context.WithCancel(context.Background())
	v := &secretVolume{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		var synced map[string][]byte
		first := true
		_ = wait.PollUntilContextCancel(ctx, secretSyncInterval, true, func(ctx context.Context) (bool, error) {
			s, err := i.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil // uninstalled: a kubelet keeps the last files
			}
			if err != nil {
				if ctx.Err() == nil {
					v.setErr(fmt.Errorf("the kubelet's stand-in reading Secret %s/%s: %w", namespace, name, err))
				}
				return false, nil
			}
			if !first && maps.EqualFunc(s.Data, synced, slices.Equal) {
				return false, nil
			}
			if err := writeAtomically(dir, s.Data); err != nil {
				v.setErr(err)
				return false, nil
			}
			v.setErr(nil)
			synced, first = s.Data, false
			return false, nil
		})
	}()
	return v
}

func (v *secretVolume) setErr(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.err = err
}

// Err is the last failure to update the files, if it has not recovered since.
func (v *secretVolume) Err() error {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

func (v *secretVolume) stop() {
	if v == nil {
		return
	}
	v.cancel()
	<-v.done
}
