package app

import (
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/quotagate/quotagate/internal/certrotation"
)

// addCertFlags binds the flags of the webhook certificate rotation (docs/certificates.md):
// with --webhook-cert-secret set, the leader manages the webhook's certificate itself, as
// the chart's certManager.enabled=false asks.
func addCertFlags(f *pflag.FlagSet, c *certrotation.Config) {
	f.StringVar(&c.SecretName, "webhook-cert-secret", c.SecretName, "Secret the leader keeps the webhook's CA and serving certificate in; empty: the certificate is managed elsewhere (cert-manager).")
	f.StringVar(&c.Namespace, "webhook-cert-namespace", c.Namespace, "Namespace of the webhook's Secret and Service.")
	f.StringVar(&c.WebhookConfiguration, "webhook-configuration", c.WebhookConfiguration, "MutatingWebhookConfiguration whose caBundle the rotator keeps.")
	f.StringVar(&c.Service, "webhook-service", c.Service, "The webhook's Service: the certificate is for <service>.<namespace>.svc.")
	f.StringSliceVar(&c.ExtraDNSNames, "webhook-cert-extra-dns-names", c.ExtraDNSNames, "More DNS names for the serving certificate.")
	f.StringVar(&c.CertDir, "webhook-cert-dir", c.CertDir, "Where the webhook's Secret is mounted in the manager's pod.")
	f.DurationVar(&c.ServerCertValidity, "webhook-cert-validity", c.ServerCertValidity, "Validity of each serving certificate (default one year).")
	f.DurationVar(&c.RenewBefore, "webhook-cert-renew-before", c.RenewBefore, "How long before its end a serving certificate is replaced (default 90 days, or a quarter of --webhook-cert-validity).")
	f.DurationVar(&c.CheckInterval, "webhook-cert-check-interval", c.CheckInterval, "How often the certificate's validity is checked (default 12h); changes to the Secret are acted on at once.")
}

func defaultCertConfig() certrotation.Config {
	return certrotation.Config{
		Namespace: envOr("POD_NAMESPACE", "quotagate-system"),
		CertDir:   "/tmp/k8s-webhook-server/serving-certs",
	}
}

// addCertRotation starts the rotator on the leader if --webhook-cert-secret is set.
func addCertRotation(mgr manager.Manager, c certrotation.Config) error {
	if c.SecretName == "" {
		return nil
	}
	ready, err := certrotation.Add(mgr, c)
	if err != nil {
		return err
	}
	log := ctrl.Log.WithName("cert-rotation")
	log.Info("Managing the serving certificate", "secret", c.Namespace+"/"+c.SecretName, "webhookConfiguration", c.WebhookConfiguration, "apiServices", c.APIServices, "dnsNames", c.DNSNames())
	go func() {
		<-ready
		log.Info("The serving certificate is issued, mounted and its CA injected")
	}()
	return nil
}
