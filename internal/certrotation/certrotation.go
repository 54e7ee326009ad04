package certrotation

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// FieldOwner is the field manager of the caBundle fields the rotator writes; `helm
// upgrade` leaves fields of other managers alone.
const FieldOwner = "quotagate-cert-rotator"

// The CA's subject. cert-controller keeps a CA only while it is valid for the name
// caName, so a CA of another name would be replaced, and the caBundle with it.
const (
	caName         = "quotagate-webhook-ca"
	caOrganization = "quotagate"
)

// Config names what the rotator manages.
type Config struct {
	// Namespace and SecretName are the Secret holding the CA and serving certificate.
	Namespace, SecretName string
	// WebhookConfiguration is the MutatingWebhookConfiguration whose caBundle is the CA;
	// empty when there is no webhook (admission by the policy) and only APIServices use
	// the certificate.
	WebhookConfiguration string
	// APIServices are APIServices whose caBundle is the CA too (served by the same
	// certificate).
	APIServices []string
	// Service is the webhook's Service: the certificate is for <Service>.<Namespace>.svc
	// and <Service>.<Namespace>.svc.cluster.local. Empty with WebhookConfiguration.
	Service string
	// ExtraDNSNames are more names the certificate is valid for.
	ExtraDNSNames []string
	// CertDir is where this process sees the Secret mounted.
	CertDir string
	// ServerCertValidity and RenewBefore time the serving certificate; 0 means one year
	// and 90 days. The CA is valid for ten years.
	ServerCertValidity, RenewBefore time.Duration
	// CheckInterval is how often the certificate is checked; 0 means 12 hours. A change
	// of the Secret or the webhook configuration is acted on at once.
	CheckInterval time.Duration
}

// Validate reports every missing or inconsistent setting at once.
func (c Config) Validate() error {
	var errs []error
	for flag, v := range map[string]string{"namespace": c.Namespace, "secret": c.SecretName, "cert dir": c.CertDir} {
		if v == "" {
			errs = append(errs, fmt.Errorf("certificate rotation: the %s must be set", flag))
		}
	}
	if (c.WebhookConfiguration == "") != (c.Service == "") {
		errs = append(errs, errors.New("certificate rotation: the webhook configuration and the webhook service go together: set both or neither"))
	}
	if c.WebhookConfiguration == "" && len(c.APIServices) == 0 {
		errs = append(errs, errors.New("certificate rotation: nothing uses the certificate: set the webhook configuration or an APIService"))
	}
	if len(c.DNSNames()) == 0 {
		errs = append(errs, errors.New("certificate rotation: the certificate needs a DNS name: set the webhook service or extra DNS names"))
	}
	if c.ServerCertValidity != 0 && c.RenewBefore >= c.ServerCertValidity {
		errs = append(errs, fmt.Errorf("certificate rotation: renew-before (%s) must be less than the validity (%s)", c.RenewBefore, c.ServerCertValidity))
	}
	return errors.Join(errs...)
}

// DNSNames are the names the serving certificate is valid for.
func (c Config) DNSNames() []string {
	var names []string
	if c.Service != "" {
		svc := c.Service + "." + c.Namespace + ".svc"
		names = append(names, svc, svc+".cluster.local")
	}
	return append(names, c.ExtraDNSNames...)
}

// Add registers the rotator with mgr; it runs while mgr leads. ready is closed once the
// certificate is in the Secret, visible in CertDir and its CA injected. When mgr starts
// leading, a certificate that lacks one of DNSNames is replaced (nameCheck).
func Add(mgr manager.Manager, c Config) (ready <-chan struct{}, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	names := c.DNSNames()
	isReady := make(chan struct{})
	var webhooks []rotator.WebhookInfo
	if c.WebhookConfiguration != "" {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: c.WebhookConfiguration, Type: rotator.Mutating})
	}
	for _, a := range c.APIServices {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: a, Type: rotator.APIService})
	}
	scope, err := newScope(c)
	if err != nil {
		return nil, err
	}
	renew := c.RenewBefore
	if c.ServerCertValidity != 0 && renew == 0 {
		renew = c.ServerCertValidity / 4
	}
	cr := &rotator.CertRotator{
		SecretKey:              types.NamespacedName{Namespace: c.Namespace, Name: c.SecretName},
		CertDir:                c.CertDir,
		CAName:                 caName,
		CAOrganization:         caOrganization,
		DNSName:                names[0],
		ExtraDNSNames:          names[1:],
		IsReady:                isReady,
		Webhooks:               webhooks,
		FieldOwner:             FieldOwner,
		RequireLeaderElection:  true,
		ServerCertDuration:     c.ServerCertValidity,
		LookaheadInterval:      renew,
		RotationCheckFrequency: c.CheckInterval,
		ControllerName:         "webhook-cert-rotator",
	}
	if err := rotator.AddRotator(scopedManager{Manager: mgr, scope: scope}, cr); err != nil {
		return nil, fmt.Errorf("adding the certificate rotator: %w", err)
	}
	check := &nameCheck{reader: mgr.GetAPIReader(), writer: mgr.GetClient(), secret: cr.SecretKey, names: names,
		log: mgr.GetLogger().WithName("cert-rotation")}
	if err := mgr.Add(check); err != nil {
		return nil, fmt.Errorf("adding the certificate's DNS name check: %w", err)
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating the certificate Secret's client: %w", err)
	}
	keeper := &secretKeeper{client: cs, reader: mgr.GetAPIReader(), secret: cr.SecretKey, owner: ownerOf(c),
		log: mgr.GetLogger().WithName("cert-rotation")}
	if err := mgr.Add(keeper); err != nil {
		return nil, fmt.Errorf("adding the certificate Secret's keeper: %w", err)
	}
	return isReady, nil
}

// scopedManager hands the rotator a rest.Config whose list and watch requests ask only
// for the objects it manages, so that its RBAC can name them.
type scopedManager struct {
	manager.Manager
	scope map[string]string
}

func (m scopedManager) GetConfig() *rest.Config {
	cfg := rest.CopyConfig(m.Manager.GetConfig())
	scope := m.scope
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &scopedTransport{next: rt, scope: scope} })
	return cfg
}

// newScope maps the collection path of each kind the rotator watches to the one name it
// needs from it.
func newScope(c Config) (map[string]string, error) {
	scope := map[string]string{"/api/v1/namespaces/" + c.Namespace + "/secrets": c.SecretName}
	if c.WebhookConfiguration != "" {
		scope["/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"] = c.WebhookConfiguration
	}
	switch len(c.APIServices) {
	case 0:
	case 1:
		scope["/apis/apiregistration.k8s.io/v1/apiservices"] = c.APIServices[0]
	default:
		return nil, fmt.Errorf("certificate rotation: at most one APIService, got %d", len(c.APIServices))
	}
	return scope, nil
}

// scopedTransport adds fieldSelector=metadata.name=<name> to list and watch requests of
// the collections in scope. The API server authorizes such requests against RBAC rules
// with resourceNames.
type scopedTransport struct {
	next  http.RoundTripper
	scope map[string]string
}

func (t *scopedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	name, ok := t.scope[path.Clean(req.URL.Path)]
	if !ok || req.Method != http.MethodGet {
		return t.next.RoundTrip(req)
	}
	q := req.URL.Query()
	sel := "metadata.name=" + name
	if old := q.Get("fieldSelector"); old != "" && !strings.Contains(old, sel) {
		sel = old + "," + sel
	}
	q.Set("fieldSelector", sel)
	r := req.Clone(req.Context())
	r.URL.RawQuery = q.Encode()
	return t.next.RoundTrip(r)
}
