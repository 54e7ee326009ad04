package localinstall

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/go-logr/logr"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/supervise"
	"helm.sh/helm/v4/pkg/action"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Upgrade is `helm upgrade` of the same chart with values merged over the current ones
// (top-level keys replace). A component whose rendered command line changed rolls out
// (see UpgradeTo).
func (i *Installation) Upgrade(ctx context.Context, values map[string]any) error {
	return i.upgrade(ctx, i.chartPath, i.opts.BinDir, values)
}

// UpgradeTo is `helm upgrade <release> <chartPath>` to another packaged chart, with the
// webhook and manager binaries of that version in binDir (the images a real upgrade
// pulls) and values merged over the current ones as Upgrade merges them. It uses the
// same post-renderer as Install; then it stands in for cert-manager (a Certificate that
// did not change keeps its Secret, one that did is issued again), for cert-manager's CA
// injector (the caBundle is injected again) and for the Deployments' rolling updates:
// each component whose binary or command line changed starts anew, becomes ready, takes
// over the webhook's Service, and only then is the old process stopped, so pod creates
// keep being admitted through the webhook all along.
func (i *Installation) UpgradeTo(ctx context.Context, chartPath, binDir string, values map[string]any) error {
	var err error
	if chartPath, err = filepath.Abs(chartPath); err != nil {
		return err
	}
	if binDir, err = filepath.Abs(binDir); err != nil {
		return err
	}
	return i.upgrade(ctx, chartPath, binDir, values)
}

// webhookPreStop is the webhook Deployment's preStop sleep in the chart: how long its
// pods keep serving once they are deleted.
const webhookPreStop = 5 * time.Second

func (i *Installation) upgrade(ctx context.Context, chartPath, binDir string, values map[string]any) error {
	log := logr.FromContextOrDiscard(ctx)
	merged := maps.Clone(i.values)
	maps.Copy(merged, values)
	selfManaged, err := selfManagedCerts(chartPath, merged)
	if err != nil {
		return err
	}
	// A switch of certificate mode changes the name the webhook's certificate carries
	// for the local Service (selfManagedHost).
	i.selfManaged = selfManaged
	i.renderer.webhookHost = i.webhookHost()
	rel, err := i.helmApply(ctx, chartPath, merged)
	if err != nil {
		return err
	}
	applied := time.Now()
	i.values, i.chartPath, i.opts.BinDir = merged, chartPath, binDir
	log.V(1).Info("Upgraded the chart", "release", rel.Name, "chart", rel.Chart.Metadata.Version, "revision", rel.Version)
	objs, err := releaseObjects(rel)
	if err != nil {
		return err
	}
	if err := i.keepCertificates(ctx, objs); err != nil {
		return err
	}
	comps := []*component{i.webhook, i.manager}
	switch i.mode = admissionModeOf(objs); i.mode {
	case AdmissionSwitching:
		// The webhook stays for this revision, beside the policy that replaces it.
		if err := i.waitPolicyApplied(ctx); err != nil {
			return err
		}
	case AdmissionPolicy:
		// No webhook to roll: one that ran before the upgrade goes with its Deployment.
		// Its pods keep serving through their preStop sleep while the API server loads
		// the policy that replaces them, and drops the webhook configuration helm
		// deleted (through an informer of its own: until then it still calls the
		// webhook). So the process stops once the policy gates and the preStop sleep
		// has passed since the upgrade.
		if err := i.waitPolicyApplied(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(applied.Add(webhookPreStop))):
		}
		if p := i.webhook.process(); p != nil {
			if err := i.stopOld(webhookName, i.webhook.snapshot().binary, p); err != nil {
				return err
			}
		}
		comps = []*component{i.manager}
	}
	for _, comp := range comps {
		if err := i.rollout(ctx, comp, objs); err != nil {
			return err
		}
	}
	if i.selfManaged {
		if err := i.waitCABundle(ctx); err != nil {
			return err
		}
	}
	return i.waitVisibilityAvailable(ctx)
}

// keepCertificates does what cert-manager does when Helm applies the release's
// Certificates again: a Certificate whose Secret still matches it (same names and
// issuer, not expired) is left alone, any other is issued. Then the webhook's cert dir
// and the caBundle are brought up to date, as the kubelet and the CA injector would.
func (i *Installation) keepCertificates(ctx context.Context, objs []*unstructured.Unstructured) error {
	var stale []*unstructured.Unstructured
	for _, o := range objs {
		if gk := o.GroupVersionKind().GroupKind(); gk.Group != certificateGVR.Group || gk.Kind != "Certificate" {
			continue
		}
		ok, err := i.certificateUpToDate(ctx, o)
		if err != nil {
			return err
		}
		if !ok {
			stale = append(stale, o)
		}
	}
	if err := i.issueCertificates(ctx, stale); err != nil {
		return err
	}
	if i.selfManaged {
		return i.wireSelfManagedCert(objs)
	}
	return i.wireIssuedCert(ctx, objs)
}

// rollout restarts comp on the release's Deployment if its binary or command line
// changed, as a rolling update with maxUnavailable 0 would: the new process on new local
// ports first, ready (and, for the webhook, routed to by the Service), then the old one
// stopped, the webhook's after its preStop sleep (webhookPreStop). The manager's leader election hands over when the old manager releases its
// Lease on exit.
func (i *Installation) rollout(ctx context.Context, comp *component, objs []*unstructured.Unstructured) error {
	before := *comp.snapshot()
	if err := i.configure(ctx, comp, objs); err != nil {
		return err
	}
	if comp.binary == before.binary && slices.Equal(comp.args, before.args) && slices.Equal(comp.env, before.env) {
		return nil
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return err
	}
	if comp.name == webhookName {
		comp.port, comp.metrics, comp.probes = ports[0], ports[1], ports[2]
	} else {
		comp.visibility, comp.metrics, comp.probes = ports[0], ports[1], ports[2]
	}
	// Configured again for the new ports.
	if err := i.configure(ctx, comp, objs); err != nil {
		return err
	}
	old := comp.process()
	startErr := i.start(ctx, comp)
	if old == nil {
		return startErr
	}
	if startErr != nil {
		// The rollout is stuck; the old process is stopped with the new one so that
		// Stop, which knows only the new one, leaves nothing running.
		return errors.Join(fmt.Errorf("rolling out the %s: %w", comp.name, startErr), old.Stop(stopGrace))
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("Rolled out", "component", comp.name, "binary", comp.binary)
	if comp.name == webhookName {
		// The old webhook pod's preStop sleep (webhook-deployment.yaml): it keeps serving
		// while the API server moves off the connections it holds to it, so that a
		// create in flight there is answered, not cut off (failurePolicy Fail would fail
		// it). Only then is it stopped.
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), old.Stop(stopGrace))
		case <-time.After(webhookPreStop):
		}
	}
	return i.stopOld(comp.name, before.binary, old)
}

// ProcessStop is a quotagate process an upgrade stopped, as a Deployment stops a pod
// it replaced or no longer has.
type ProcessStop struct {
	// Component is "webhook" or "manager"; Binary is the binary the process ran.
	Component, Binary string
	// Began is when the process was sent SIGTERM, Ended when it had exited.
	Began, Ended time.Time
}

// ProcessStops are the processes the upgrades stopped, in order.
func (i *Installation) ProcessStops() []ProcessStop {
	i.stopsMu.Lock()
	defer i.stopsMu.Unlock()
	return slices.Clone(i.stops)
}

// stopOld stops p, the process of component that ran binary, and records it.
func (i *Installation) stopOld(component, binary string, p *supervise.Process) error {
	began := time.Now()
	err := p.Stop(stopGrace)
	i.stopsMu.Lock()
	defer i.stopsMu.Unlock()
	i.stops = append(i.stops, ProcessStop{Component: component, Binary: binary, Began: began, Ended: time.Now()})
	return err
}

// componentState is what decides whether a component rolls out.
type componentState struct {
	binary    string
	args, env []string
}

func (comp *component) snapshot() *componentState {
	return &componentState{binary: comp.binary, args: slices.Clone(comp.args), env: slices.Clone(comp.env)}
}

// ReleaseInfo is what `helm status` says of the release.
type ReleaseInfo struct {
	Revision     int
	Status       string
	Chart        string
	ChartVersion string
	AppVersion   string
}

// ReleaseStatus reads the deployed release, as `helm status <release>` does.
func (i *Installation) ReleaseStatus() (ReleaseInfo, error) {
	r, err := action.NewStatus(i.helm).Run(i.opts.Release)
	if err != nil {
		return ReleaseInfo{}, fmt.Errorf("helm status %s: %w", i.opts.Release, err)
	}
	rel, err := asRelease(r)
	if err != nil {
		return ReleaseInfo{}, err
	}
	info := ReleaseInfo{Revision: rel.Version, Status: rel.Info.Status.String()}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		info.Chart, info.ChartVersion, info.AppVersion = rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Chart.Metadata.AppVersion
	}
	return info, nil
}

// ManagerBinary is the manager binary the manager runs now.
func (i *Installation) ManagerBinary() string { return i.manager.snapshot().binary }

// certificateUpToDate is cert-manager's check of a Certificate against its Secret: the
// Secret exists, was issued for this Certificate with the same common name, DNS names
// and issuer (the annotations writeCertSecret sets, as cert-manager does), holds a
// certificate of the same kind, and is not due for renewal (renewBefore, by default a
// third of the duration, before it expires).
func (i *Installation) certificateUpToDate(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	req, cert, err := certificateRequest(obj)
	if err != nil {
		return false, err
	}
	secret, err := i.client.CoreV1().Secrets(cert.Namespace).Get(ctx, cert.Spec.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the Secret of Certificate %s: %w", cert.Name, err)
	}
	ann := secret.Annotations
	if ann[cmapi.CertificateNameKey] != cert.Name || ann[cmapi.CommonNameAnnotationKey] != req.commonName ||
		ann[cmapi.AltNamesAnnotationKey] != strings.Join(req.dnsNames, ",") || ann[cmapi.IssuerNameAnnotationKey] != cert.Spec.IssuerRef.Name {
		return false, nil
	}
	block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
	if block == nil {
		return false, nil
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil || crt.IsCA != req.isCA {
		return false, nil //nolint:nilerr // an unreadable certificate is issued again, as cert-manager does
	}
	renewBefore := req.duration / 3
	if cert.Spec.RenewBefore != nil {
		renewBefore = cert.Spec.RenewBefore.Duration
	}
	return time.Now().Before(crt.NotAfter.Add(-renewBefore)), nil
}
