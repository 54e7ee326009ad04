package localcluster

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// defaultTokenTTL is the lifetime of a ServiceAccount token when none is asked for.
const defaultTokenTTL = time.Hour

// ServiceAccountConfig returns a client configuration that authenticates as the
// ServiceAccount namespace/name with a token from the TokenRequest API, so a component
// run in the test process is subject to RBAC like it would be in a pod. The
// ServiceAccount is created if it does not exist; its namespace must exist. ttl is the
// token's lifetime: 0 means one hour, and the API server refuses less than 10 minutes.
// The token is not refreshed.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string, ttl time.Duration) (*rest.Config, error) {
	if ttl == 0 {
		ttl = defaultTokenTTL
	}
	client, err := kubernetes.NewForConfig(c.admin)
	if err != nil {
		return nil, fmt.Errorf("building admin client: %w", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating service account %s/%s: %w", namespace, name, err)
	}
	seconds := int64(ttl / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for service account %s/%s: %w", namespace, name, err)
	}
	return &rest.Config{
		Host:            c.admin.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.admin.CAData},
		BearerToken:     tr.Status.Token,
		QPS:             c.admin.QPS,
		Burst:           c.admin.Burst,
	}, nil
}
