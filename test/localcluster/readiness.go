package localcluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The readiness checks Start waits on, in order.

func etcdHealthy(port int) condition {
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
			return false, fmt.Errorf("etcd /health: %s: %s", resp.Status, body)
		}
		return true, nil
	}
}

func apiserverReady(client kubernetes.Interface) condition {
	return func(ctx context.Context) (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("/readyz: %w: %s", err, body)
		}
		return string(body) == "ok", nil
	}
}

func nodesSchedulable(client kubernetes.Interface, want int) condition {
	return func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range nodes.Items {
			if nodeSchedulable(&nodes.Items[i]) {
				ready++
			}
		}
		if ready < want {
			return false, fmt.Errorf("%d of %d nodes Ready and untainted", ready, want)
		}
		return true, nil
	}
}

func defaultServiceAccount(client kubernetes.Interface) condition {
	return func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
}

func leasesHeld(client kubernetes.Interface, names ...string) condition {
	return func(ctx context.Context) (bool, error) {
		for _, name := range names {
			lease, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("lease %s: %w", name, err)
			}
			if !held(lease) {
				return false, fmt.Errorf("lease %s not held", name)
			}
		}
		return true, nil
	}
}

func held(l *coordinationv1.Lease) bool {
	return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
}
