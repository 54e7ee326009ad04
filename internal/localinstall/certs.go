package localinstall

import (
	"context"
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
	"k8s.io/client-go/util/retry"

	"github.com/quotagate/quotagate/internal/pki"
)

// certificateGVR is cert-manager's Certificate resource.
var certificateGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

// injectCAFromAnnotation names the Certificate whose CA cert-manager's CA injector
// copies into a webhook configuration's caBundle.
const injectCAFromAnnotation = cmapi.WantInjectAnnotation

// cainjectorFieldManager owns the caBundle fields, so that Helm's server-side apply on
// upgrade (which never sets caBundle) leaves them alone, as it does with cainjector.
const cainjectorFieldManager = "cert-manager-cainjector"

// servingCert is a serving certificate and the CA that signed it, PEM-encoded.
type servingCert struct {
	caPEM, certPEM, keyPEM []byte
}

// certRequest is what a cert-manager Certificate asks for, plus the IP addresses the
// local process is reached at.
type certRequest struct {
	commonName string
	dnsNames   []string
	ips        []net.IP
	duration   time.Duration
}

// issueServingCert creates a self-signed CA (like the chart's default self-signed
// Issuer) and a serving certificate from it.
func issueServingCert(req certRequest, now time.Time) (servingCert, error) {
	notBefore := now.Add(-time.Minute)
	ca, err := pki.NewCA("quotagate-localinstall-ca", notBefore, now.Add(req.duration+24*time.Hour))
	if err != nil {
		return servingCert{}, err
	}
	pair, err := ca.Issue(pki.Spec{
		CommonName: req.commonName,
		DNSNames:   req.dnsNames,
		IPs:        req.ips,
		Server:     true,
		NotBefore:  notBefore,
		NotAfter:   now.Add(req.duration),
	})
	if err != nil {
		return servingCert{}, err
	}
	return servingCert{caPEM: ca.CertPEM, certPEM: pair.CertPEM, keyPEM: pair.KeyPEM}, nil
}

// certificateRequest reads what the chart's Certificate asks for, through cert-manager's
// own API types.
func certificateRequest(obj *unstructured.Unstructured) (req certRequest, secretName string, err error) {
	cert := &cmapi.Certificate{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cert); err != nil {
		return req, "", fmt.Errorf("reading Certificate %s: %w", obj.GetName(), err)
	}
	if cert.Spec.SecretName == "" {
		return req, "", fmt.Errorf("certificate %s has no spec.secretName", cert.Name)
	}
	req.commonName = cert.Spec.CommonName
	req.dnsNames = cert.Spec.DNSNames
	req.duration = cmapi.DefaultCertificateDuration
	if cert.Spec.Duration != nil {
		req.duration = cert.Spec.Duration.Duration
	}
	// The API server reaches the local process at 127.0.0.1 (see pointWebhooksAt).
	req.ips = []net.IP{net.IPv4(127, 0, 0, 1)}
	return req, cert.Spec.SecretName, nil
}

// issueWebhookCert stands in for cert-manager: it issues the certificate the chart's
// Certificate asks for into the Secret it names (the Secret the webhook Deployment
// mounts), and writes tls.crt and tls.key into certDir, where the local webhook process
// reads them as the pod would from its volume.
func (i *Installation) issueWebhookCert(ctx context.Context, cert *unstructured.Unstructured, certDir string) error {
	req, secretName, err := certificateRequest(cert)
	if err != nil {
		return err
	}
	sc, err := issueServingCert(req, time.Now())
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      secretName,
			Namespace: cert.GetNamespace(),
			Annotations: map[string]string{
				cmapi.CertificateNameKey:      cert.GetName(),
				cmapi.CommonNameAnnotationKey: req.commonName,
				cmapi.AltNamesAnnotationKey:   strings.Join(req.dnsNames, ","),
				"cert-manager.io/ip-sans":     "127.0.0.1",
			},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"ca.crt": sc.caPEM, corev1.TLSCertKey: sc.certPEM, corev1.TLSPrivateKeyKey: sc.keyPEM},
	}
	secrets := i.client.CoreV1().Secrets(secret.Namespace)
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("creating webhook cert dir: %w", err)
	}
	for name, data := range map[string][]byte{corev1.TLSCertKey: sc.certPEM, corev1.TLSPrivateKeyKey: sc.keyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing webhook %s: %w", name, err)
		}
	}
	return nil
}

// injectCABundle does what cert-manager's CA injector does for a
// MutatingWebhookConfiguration: follow its cert-manager.io/inject-ca-from annotation to
// the Certificate, read ca.crt from the Certificate's Secret and put it in every
// webhook's clientConfig.caBundle.
func (i *Installation) injectCABundle(ctx context.Context, mwcName string) error {
	hooks := i.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mwc, err := hooks.Get(ctx, mwcName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", mwcName, err)
		}
		ref := mwc.Annotations[injectCAFromAnnotation]
		ns, name, ok := strings.Cut(ref, "/")
		if !ok {
			return fmt.Errorf("MutatingWebhookConfiguration %s: annotation %s=%q is not namespace/name", mwcName, injectCAFromAnnotation, ref)
		}
		cert, err := i.dynamic.Resource(certificateGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading Certificate %s: %w", ref, err)
		}
		secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		secret, err := i.client.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the Secret of Certificate %s: %w", ref, err)
		}
		ca := secret.Data["ca.crt"]
		if len(ca) == 0 {
			return fmt.Errorf("secret %s/%s has no ca.crt", ns, secretName)
		}
		for w := range mwc.Webhooks {
			mwc.Webhooks[w].ClientConfig.CABundle = ca
		}
		_, err = hooks.Update(ctx, mwc, metav1.UpdateOptions{FieldManager: cainjectorFieldManager})
		return err
	})
}
