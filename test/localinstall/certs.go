package localinstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/quotagate/quotagate/test/pki"
)

// cert-manager's Certificate and Issuer resources.
var (
	certificateGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	issuerGVR      = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
	apiServiceGVR  = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// injectCAFromAnnotation names the Certificate whose CA cert-manager's CA injector
// copies into a webhook configuration's caBundle.
const injectCAFromAnnotation = cmapi.WantInjectAnnotation

// cainjectorFieldManager owns the caBundle fields, so that Helm's server-side apply on
// upgrade (which never sets caBundle) leaves them alone, as it does with cainjector.
const cainjectorFieldManager = "cert-manager-cainjector"

// errIssuerNotReady means a Certificate's CA Issuer has no CA yet (its Secret is not
// written): cert-manager would retry, and so does issueCertificates.
var errIssuerNotReady = errors.New("the CA Issuer's Secret is not issued yet")

// certRequest is what a cert-manager Certificate asks for, plus the IP addresses the
// local process is reached at.
type certRequest struct {
	commonName string
	dnsNames   []string
	ips        []net.IP
	duration   time.Duration
	isCA       bool
}

// certificateRequest reads what a Certificate asks for, through cert-manager's own API
// types.
func certificateRequest(obj *unstructured.Unstructured) (req certRequest, cert *cmapi.Certificate, err error) {
	cert = &cmapi.Certificate{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cert); err != nil {
		return req, nil, fmt.Errorf("reading Certificate %s: %w", obj.GetName(), err)
	}
	if cert.Spec.SecretName == "" {
		return req, nil, fmt.Errorf("certificate %s has no spec.secretName", cert.Name)
	}
	req.commonName = cert.Spec.CommonName
	req.dnsNames = cert.Spec.DNSNames
	req.isCA = cert.Spec.IsCA
	req.duration = cmapi.DefaultCertificateDuration
	if cert.Spec.Duration != nil {
		req.duration = cert.Spec.Duration.Duration
	}
	if !req.isCA {
		// The API server reaches the local process at 127.0.0.1 (see pointWebhooksAt).
		req.ips = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	return req, cert, nil
}

// selfSign issues a self-signed CA certificate, as cert-manager's SelfSigned issuer does
// for a Certificate with isCA. The Secret's ca.crt is the certificate itself.
func selfSign(req certRequest, now time.Time) (map[string][]byte, error) {
	if !req.isCA {
		return nil, errors.New("a self-signed serving certificate is not emulated: the chart's self-signed Issuer only signs its CA")
	}
	ca, err := pki.NewCA(req.commonName, now.Add(-time.Minute), now.Add(req.duration))
	if err != nil {
		return nil, err
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: key, cmmetaCAKey: ca.CertPEM}, nil
}

// signWithCA issues a serving certificate signed by the CA in caSecret, as
// cert-manager's CA issuer does: the Secret's ca.crt is that CA.
func signWithCA(req certRequest, caSecret *corev1.Secret, now time.Time) (map[string][]byte, error) {
	if req.isCA {
		return nil, errors.New("an intermediate CA is not emulated")
	}
	ca, err := pki.ParseCA(caSecret.Data[corev1.TLSCertKey], caSecret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("reading the CA in Secret %s/%s: %w", caSecret.Namespace, caSecret.Name, err)
	}
	pair, err := ca.Issue(pki.Spec{
		CommonName: req.commonName,
		DNSNames:   req.dnsNames,
		IPs:        req.ips,
		Server:     true,
		NotBefore:  now.Add(-time.Minute),
		NotAfter:   now.Add(req.duration),
	})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{corev1.TLSCertKey: pair.CertPEM, corev1.TLSPrivateKeyKey: pair.KeyPEM, cmmetaCAKey: ca.CertPEM}, nil
}

// cmmetaCAKey is the Secret key cert-manager writes the issuing CA under.
const cmmetaCAKey = "ca.crt"

// issueCertificates stands in for cert-manager's certificates controller: it issues
// every Certificate of the release into the Secret it names, each signed by the Issuer its
// issuerRef names (the chart's self-signed Issuer signs the CA, the CA Issuer signs the
// serving certificate with the CA's Secret), CAs before what they sign.
func (i *Installation) issueCertificates(ctx context.Context, objs []*unstructured.Unstructured) error {
	var pending []*unstructured.Unstructured
	for _, o := range objs {
		if gk := o.GroupVersionKind().GroupKind(); gk.Group == certificateGVR.Group && gk.Kind == "Certificate" {
			pending = append(pending, o)
		}
	}
	for len(pending) > 0 {
		var waiting []*unstructured.Unstructured
		var waitErr error
		for _, cert := range pending {
			err := i.issue(ctx, cert)
			if errors.Is(err, errIssuerNotReady) {
				waiting, waitErr = append(waiting, cert), err
				continue
			}
			if err != nil {
				return err
			}
		}
		if len(waiting) == len(pending) {
			return waitErr
		}
		pending = waiting
	}
	return nil
}

// issue issues one Certificate (a live object or one of the release) into its Secret.
func (i *Installation) issue(ctx context.Context, obj *unstructured.Unstructured) error {
	req, cert, err := certificateRequest(obj)
	if err != nil {
		return err
	}
	ref := cert.Spec.IssuerRef
	if ref.Kind != "" && ref.Kind != cmapi.IssuerKind {
		return fmt.Errorf("certificate %s is issued by %s %s: only the chart's own Issuers are emulated here", cert.Name, ref.Kind, ref.Name)
	}
	u, err := i.dynamic.Resource(issuerGVR).Namespace(cert.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Issuer %s of Certificate %s (only the chart's own Issuers are emulated here): %w", ref.Name, cert.Name, err)
	}
	var issuer cmapi.Issuer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &issuer); err != nil {
		return fmt.Errorf("reading Issuer %s: %w", ref.Name, err)
	}
	var data map[string][]byte
	switch {
	case issuer.Spec.SelfSigned != nil:
		data, err = selfSign(req, time.Now())
	case issuer.Spec.CA != nil:
		caSecret, getErr := i.client.CoreV1().Secrets(cert.Namespace).Get(ctx, issuer.Spec.CA.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(getErr) {
			return fmt.Errorf("certificate %s, Issuer %s: %w", cert.Name, issuer.Name, errIssuerNotReady)
		}
		if getErr != nil {
			return fmt.Errorf("reading the CA Secret of Issuer %s: %w", issuer.Name, getErr)
		}
		data, err = signWithCA(req, caSecret, time.Now())
	default:
		return fmt.Errorf("issuer %s is neither selfSigned nor ca: not emulated here", issuer.Name)
	}
	if err != nil {
		return fmt.Errorf("issuing Certificate %s: %w", cert.Name, err)
	}
	return i.writeCertSecret(ctx, cert, req, data)
}

// writeCertSecret creates or replaces a Certificate's Secret, annotated as cert-manager
// annotates it.
func (i *Installation) writeCertSecret(ctx context.Context, cert *cmapi.Certificate, req certRequest, data map[string][]byte) error {
	annotations := map[string]string{
		cmapi.CertificateNameKey:      cert.Name,
		cmapi.CommonNameAnnotationKey: req.commonName,
		cmapi.AltNamesAnnotationKey:   strings.Join(req.dnsNames, ","),
		cmapi.IssuerNameAnnotationKey: cert.Spec.IssuerRef.Name,
	}
	if len(req.ips) > 0 {
		annotations[cmapi.IPSANAnnotationKey] = req.ips[0].String()
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: cert.Spec.SecretName, Namespace: cert.Namespace, Annotations: annotations},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
	secrets := i.client.CoreV1().Secrets(secret.Namespace)
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// syncCertDir stands in for the kubelet: it projects the webhook's Secret into certDir,
// where the local webhook process reads it as the pod would from its volume, with the
// kubelet's atomic swap (files in a fresh directory, then the ..data symlink renamed over
// the old one), so the webhook never reads a certificate with the other one's key.
func (i *Installation) syncCertDir(ctx context.Context, namespace, secretName, certDir string) error {
	secret, err := i.client.CoreV1().Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the webhook's Secret %s/%s: %w", namespace, secretName, err)
	}
	return writeAtomically(certDir, secret.Data)
}

// writeAtomically writes files into dir the way the kubelet's AtomicWriter updates a
// Secret volume: <dir>/..<timestamp>/<name>, <dir>/..data -> ..<timestamp> (replaced by a
// rename), <dir>/<name> -> ..data/<name>; the previous timestamped directory is removed,
// which is what a file watcher on <dir>/<name> sees.
func writeAtomically(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	dataLink := filepath.Join(dir, "..data")
	old, _ := os.Readlink(dataLink)
	tsDir, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("creating a new version of %s: %w", dir, err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tsDir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return fmt.Errorf("linking the new version of %s: %w", dir, err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		return fmt.Errorf("swapping in the new version of %s: %w", dir, err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join("..data", name) {
			continue
		}
		_ = os.Remove(link) // a plain file from an older layout
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			return fmt.Errorf("linking %s: %w", link, err)
		}
	}
	if old != "" && old != filepath.Base(tsDir) {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return fmt.Errorf("removing the old version of %s: %w", dir, err)
		}
	}
	return nil
}

// injectCABundle does what cert-manager's CA injector does for a
// MutatingWebhookConfiguration: follow its cert-manager.io/inject-ca-from annotation to
// the Certificate, read ca.crt from the Certificate's Secret and put it in every
// webhook's clientConfig.caBundle. With the chart's CA chain the annotation names the CA
// Certificate, so this is the CA and stays the same when the serving certificate renews.
func (i *Installation) injectCABundle(ctx context.Context, mwcName string) error {
	hooks := i.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mwc, err := hooks.Get(ctx, mwcName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", mwcName, err)
		}
		ca, err := i.injectedCA(ctx, "MutatingWebhookConfiguration "+mwcName, mwc.Annotations)
		if err != nil {
			return err
		}
		for w := range mwc.Webhooks {
			mwc.Webhooks[w].ClientConfig.CABundle = ca
		}
		_, err = hooks.Update(ctx, mwc, metav1.UpdateOptions{FieldManager: cainjectorFieldManager})
		return err
	})
}

// injectAPIServiceCABundle does the same for an APIService: its spec.caBundle, with a
// merge patch (the aggregator writes the APIService's status all the time, so an update
// of the whole object would keep losing to it).
func (i *Installation) injectAPIServiceCABundle(ctx context.Context, name string) error {
	apiservices := i.dynamic.Resource(apiServiceGVR)
	svc, err := apiservices.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading APIService %s: %w", name, err)
	}
	ca, err := i.injectedCA(ctx, "APIService "+name, svc.GetAnnotations())
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"caBundle": ca}})
	if err != nil {
		return err
	}
	if _, err := apiservices.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cainjectorFieldManager}); err != nil {
		return fmt.Errorf("injecting the CA into APIService %s: %w", name, err)
	}
	return nil
}

// injectedCA is the CA that an object's cert-manager.io/inject-ca-from annotation
// points to: ca.crt of the named Certificate's Secret.
func (i *Installation) injectedCA(ctx context.Context, what string, annotations map[string]string) ([]byte, error) {
	ref := annotations[injectCAFromAnnotation]
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		return nil, fmt.Errorf("%s: annotation %s=%q is not namespace/name", what, injectCAFromAnnotation, ref)
	}
	cert, err := i.dynamic.Resource(certificateGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Certificate %s: %w", ref, err)
	}
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	secret, err := i.client.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the Secret of Certificate %s: %w", ref, err)
	}
	ca := secret.Data[cmmetaCAKey]
	if len(ca) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no ca.crt", ns, secretName)
	}
	return ca, nil
}

// RenewWebhookCert renews the webhook's serving certificate as cert-manager does when
// renewBefore is reached: a new key and certificate from the same CA Issuer, written into
// the same Secret; then, as the kubelet and cert-manager's CA injector would, it updates
// the webhook's mounted files (the webhook process reloads them) and re-injects the
// caBundle, which the chart's CA chain leaves unchanged.
func (i *Installation) RenewWebhookCert(ctx context.Context) error {
	if i.selfManaged {
		return errors.New("certManager.enabled=false: the manager renews the certificate; empty the Secret's tls.crt to force it")
	}
	obj, err := i.dynamic.Resource(certificateGVR).Namespace(i.opts.Namespace).Get(ctx, i.servingCert, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the webhook's Certificate: %w", err)
	}
	if err := i.issue(ctx, obj); err != nil {
		return fmt.Errorf("renewing the webhook's certificate: %w", err)
	}
	secretName, _, _ := unstructured.NestedString(obj.Object, "spec", "secretName")
	if err := i.syncCertDir(ctx, i.opts.Namespace, secretName, i.certDir()); err != nil {
		return err
	}
	if i.apiService != "" {
		if err := i.injectAPIServiceCABundle(ctx, i.apiService); err != nil {
			return err
		}
	}
	return i.injectCABundle(ctx, i.webhookConfiguration)
}
