package visibility

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/client-go/rest"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Client reads visibility.quotagate.io through the API server with the credentials of
// the REST client it is given: the user's own, in the kubectl plugin and its UI. Its
// errors are the API server's (a *apierrors.StatusError carrying the Status it
// answered, its message and details), so a caller can tell a refusal from a budget the
// manager does not hold and say what each means in its own words.
type Client struct {
	rc rest.Interface
}

// NewClient reads through rc, a REST client of a rest config (for example a
// clientset's CoreV1().RESTClient(): it is used with absolute paths only).
func NewClient(rc rest.Interface) Client {
	return Client{rc: rc}
}

// PendingPodsPath is the path of key's pendingpods subresource.
func PendingPodsPath(key quota.BudgetKey) string {
	if key.IsCluster() {
		return GroupVersionPath + "/" + visv1.ResourceClusterBudgets + "/" + key.Name + "/" + visv1.SubresourcePendingPods
	}
	return GroupVersionPath + "/namespaces/" + key.Namespace + "/" + visv1.ResourceBudgets + "/" + key.Name + "/" + visv1.SubresourcePendingPods
}

// PodStatusPath is the path of one pod's PendingPodStatus.
func PodStatusPath(namespace, name string) string {
	return GroupVersionPath + "/namespaces/" + namespace + "/" + visv1.ResourcePendingPods + "/" + name
}

// PendingPods reads the page of key's queue from position offset+1, at most limit pods
// (the server caps it at visv1.MaxLimit; 0 asks for visv1.DefaultLimit).
func (c Client) PendingPods(ctx context.Context, key quota.BudgetKey, offset, limit int) (*visv1.PendingPodList, error) {
	var list visv1.PendingPodList
	err := c.get(ctx, PendingPodsPath(key), &list, "limit", strconv.Itoa(limit), "offset", strconv.Itoa(offset))
	if err != nil {
		return nil, err
	}
	return &list, nil
}

// PodStatus reads where the gated pod namespace/name waits.
func (c Client) PodStatus(ctx context.Context, namespace, name string) (*visv1.PendingPodStatus, error) {
	var st visv1.PendingPodStatus
	if err := c.get(ctx, PodStatusPath(namespace, name), &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// PodSimulationsPath is the path podsimulations are created at in namespace.
func PodSimulationsPath(namespace string) string {
	return GroupVersionPath + "/namespaces/" + namespace + "/" + visv1.ResourcePodSimulations
}

// Simulate creates sim in namespace and returns the answer: sim with its status.
func (c Client) Simulate(ctx context.Context, namespace string, sim *visv1.PodSimulation) (*visv1.PodSimulation, error) {
	body, err := json.Marshal(sim)
	if err != nil {
		return nil, err
	}
	res := c.rc.Post().AbsPath(PodSimulationsPath(namespace)).SetHeader("Content-Type", "application/json").Body(body).Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	raw, err := res.Raw()
	if err != nil {
		return nil, err
	}
	var out visv1.PodSimulation
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	return &out, nil
}

// get decodes the answer to a GET of path into into. params are name, value pairs.
func (c Client) get(ctx context.Context, path string, into any, params ...string) error {
	req := c.rc.Get().AbsPath(path)
	for i := 0; i+1 < len(params); i += 2 {
		req = req.Param(params[i], params[i+1])
	}
	// Result.Error, unlike DoRaw, decodes the Status the API server answers: its message,
	// and the details that tell the manager's 404 from a missing API.
	res := req.Do(ctx)
	if err := res.Error(); err != nil {
		return err
	}
	body, err := res.Raw()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	return nil
}
