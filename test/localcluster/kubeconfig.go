package localcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/quotagate/quotagate/test/pki"
)

// certValidity is long enough for any test or demo, short enough to be obviously local.
// Certificates are backdated an hour, so a clock slightly behind accepts them.
const certValidity = 365 * 24 * time.Hour

// clusterName and contextName are the names used inside every kubeconfig written here.
const (
	clusterName = "quotagate-local"
	contextName = "quotagate-local"
)

// kubeconfigFor turns a rest.Config into a kubeconfig with one cluster, one user and
// one context. Credentials are embedded: the file stands alone.
func kubeconfigFor(cfg *rest.Config, user string) (*clientcmdapi.Config, error) {
	if cfg.Host == "" {
		return nil, errors.New("config has no host")
	}
	caData, err := fileOrData(cfg.CAData, cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA: %w", err)
	}
	certData, err := fileOrData(cfg.CertData, cfg.CertFile)
	if err != nil {
		return nil, fmt.Errorf("reading client certificate: %w", err)
	}
	keyData, err := fileOrData(cfg.KeyData, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading client key: %w", err)
	}
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		b, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading token: %w", err)
		}
		token = string(b)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[clusterName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: caData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certData,
		ClientKeyData:         keyData,
		Token:                 token,
		Username:              cfg.Username,
		Password:              cfg.Password,
	}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	kc.CurrentContext = contextName
	return kc, nil
}

func fileOrData(data []byte, file string) ([]byte, error) {
	if len(data) > 0 || file == "" {
		return data, nil
	}
	return os.ReadFile(file)
}

// WriteKubeconfig writes cfg as a kubeconfig file at path (mode 0600), with the
// credentials embedded, for processes that take --kubeconfig.
func (c *Cluster) WriteKubeconfig(cfg *rest.Config, path string) error {
	return writeKubeconfig(cfg, "user", path)
}

func writeKubeconfig(cfg *rest.Config, user, path string) error {
	kc, err := kubeconfigFor(cfg, user)
	if err != nil {
		return fmt.Errorf("building kubeconfig %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// frontProxyClient is the common name of the client certificate kube-apiserver's
// aggregation layer proxies with.
const frontProxyClient = "front-proxy-client"

// credentials are the files written for a cluster, returned so Start can build the
// admin rest.Config without reading them back.
type credentials struct {
	caPEM []byte
	admin pki.KeyPair
}

// writeCredentials generates the CA, the serving certificate, the ServiceAccount
// signing key and a client certificate plus kubeconfig for each identity.
func writeCredentials(l layout, p ports) (credentials, error) {
	now := time.Now()
	notBefore, notAfter := now.Add(-time.Hour), now.Add(certValidity)
	ca, err := pki.NewCA("quotagate-local-ca", notBefore, notAfter)
	if err != nil {
		return credentials{}, err
	}
	serving, err := ca.Issue(pki.Spec{
		CommonName: KubeAPIServer,
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPs:       []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
		Server:    true,
		NotBefore: notBefore,
		NotAfter:  notAfter,
	})
	if err != nil {
		return credentials{}, err
	}
	frontCA, err := pki.NewCA("front-proxy-ca", notBefore, notAfter)
	if err != nil {
		return credentials{}, err
	}
	frontClient, err := frontCA.Issue(pki.Spec{CommonName: frontProxyClient, NotBefore: notBefore, NotAfter: notAfter})
	if err != nil {
		return credentials{}, err
	}
	saPrivate, saPublic, err := pki.NewSigningKey()
	if err != nil {
		return credentials{}, fmt.Errorf("service account signing key: %w", err)
	}
	if err := os.MkdirAll(l.path("pki"), 0o700); err != nil {
		return credentials{}, fmt.Errorf("creating pki directory: %w", err)
	}
	files := map[string][]byte{
		l.caCert():       ca.CertPEM,
		l.servingCert():  serving.CertPEM,
		l.servingKey():   serving.KeyPEM,
		l.saPrivateKey(): saPrivate,
		l.saPublicKey():  saPublic,

		l.frontProxyCA():         frontCA.CertPEM,
		l.frontProxyClientCert(): frontClient.CertPEM,
		l.frontProxyClientKey():  frontClient.KeyPEM,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return credentials{}, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	creds := credentials{caPEM: ca.CertPEM}
	host := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.apiserver))
	for _, id := range identities {
		pair, err := ca.Issue(pki.Spec{CommonName: id.user, Organizations: id.groups, NotBefore: notBefore, NotAfter: notAfter})
		if err != nil {
			return credentials{}, err
		}
		if id.kubeconfig == adminUser {
			creds.admin = pair
		}
		cfg := &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{
			CAData: ca.CertPEM, CertData: pair.CertPEM, KeyData: pair.KeyPEM,
		}}
		if err := writeKubeconfig(cfg, id.user, l.kubeconfig(id.kubeconfig)); err != nil {
			return credentials{}, err
		}
	}
	return creds, nil
}
