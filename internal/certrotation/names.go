package certrotation

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The keys of the serving certificate in the Secret, as cert-controller names them.
const (
	certKey = "tls.crt"
	keyKey  = "tls.key"
)

// nameCheckBackoff bounds how long the name check retries an API error before it gives
// up and stops the manager (about 30 seconds), as the rotator does when its first check
// fails: the restarted pod tries again.
var nameCheckBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 6}

// missingNames returns the names of want that the first certificate in certPEM is not
// valid for, sorted, or nil if it has them all. DNS names compare case-insensitively.
// An empty or unparsable certificate gives nil: cert-controller already replaces a
// certificate it cannot use.
func missingNames(certPEM []byte, want []string) []string {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	has := make(map[string]bool, len(cert.DNSNames))
	for _, n := range cert.DNSNames {
		has[strings.ToLower(n)] = true
	}
	var missing []string
	for _, n := range want {
		if !has[strings.ToLower(n)] && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	return missing
}

// nameCheck makes the rotator issue a new serving certificate when the one in the Secret
// lacks a wanted name. cert-controller checks a certificate against its first name only,
// so a name added later (the visibility API's Service, on an upgrade that enables it)
// would otherwise be missing until the certificate expires. It runs once, on the
// leader, when it starts leading.
//
// It removes tls.crt and tls.key from the Secret and keeps the CA: cert-controller sees
// the change, finds no serving certificate and signs a new one for every name with the
// same CA, so the caBundle stays valid and no client loses trust.
type nameCheck struct {
	// reader gets the Secret by name, which the rotator's Role allows; a cached read
	// would list every Secret of the namespace.
	reader client.Reader
	writer client.Writer
	secret types.NamespacedName
	names  []string
	log    logr.Logger
}

var _ manager.LeaderElectionRunnable = (*nameCheck)(nil)

func (*nameCheck) NeedLeaderElection() bool { return true }

// Start checks the Secret once and returns. An API error that outlasts nameCheckBackoff
// stops the manager; the end of leadership just ends the check.
func (n *nameCheck) Start(ctx context.Context) error {
	err := retry.OnError(nameCheckBackoff, func(err error) bool { return ctx.Err() == nil }, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			_, err := n.dropCertLackingNames(ctx)
			return err
		})
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("checking the DNS names of the serving certificate in Secret %s: %w", n.secret, err)
	}
	return nil
}

// dropCertLackingNames removes the serving certificate and its key from the Secret if
// the certificate lacks one of n.names, and returns the names it lacked.
func (n *nameCheck) dropCertLackingNames(ctx context.Context) ([]string, error) {
	var s corev1.Secret
	if err := n.reader.Get(ctx, n.secret, &s); err != nil {
		if apierrors.IsNotFound(err) {
			// cert-controller waits for the Secret too: the chart creates it.
			return nil, nil
		}
		return nil, err
	}
	missing := missingNames(s.Data[certKey], n.names)
	if len(missing) == 0 {
		return nil, nil
	}
	n.log.Info("The serving certificate lacks DNS names; removing it so that the rotator issues one for every name from the same CA",
		"secret", klog.KRef(n.secret.Namespace, n.secret.Name), "missing", missing, "dnsNames", n.names)
	delete(s.Data, certKey)
	delete(s.Data, keyKey)
	if err := n.writer.Update(ctx, &s, client.FieldOwner(FieldOwner)); err != nil {
		return nil, err
	}
	return missing, nil
}
