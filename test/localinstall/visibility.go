package localinstall

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The visibility API (visibility.quotagate.io) is served by the manager process and
// reached through kube-apiserver's aggregation layer: the post-renderer makes its Service
// an ExternalName Service for localhost on the port of a local stand-in (service.go),
// which forwards to the manager that is ready now; cert-manager's stand-in (or, with
// certManager.enabled=false, the manager's rotator) injects the CA into the APIService.

// waitVisibilityAvailable waits until the aggregation layer reports the release's
// APIService Available, as `kubectl wait --for=condition=Available apiservice/...`
// would; at once when the release does not serve the API.
func (i *Installation) waitVisibilityAvailable(ctx context.Context) error {
	if i.apiService == "" {
		return nil
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, i.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		svc, err := i.dynamic.Resource(apiServiceGVR).Get(ctx, i.apiService, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Available" {
				last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				return m["status"] == "True", nil
			}
		}
		last = "no Available condition yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for APIService %s to be Available (%s): %w; see %s", i.apiService, last, err, i.manager.logPath)
	}
	return nil
}

// VisibilityAPIService is the release's APIService for visibility.quotagate.io, ""
// when the release does not serve the API (visibility.enabled=false).
func (i *Installation) VisibilityAPIService() string { return i.apiService }

// VisibilityAddress is host:port of the stand-in for the visibility API's Service,
// which forwards to the manager process that is ready now.
func (i *Installation) VisibilityAddress() string { return i.visSvc.addr() }
