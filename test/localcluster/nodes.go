package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// nodeName names the i-th kwok node.
func nodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// kwokNode builds a fake node for kwok to manage. Its capacity is set at creation: the
// node-initialize stage keeps whatever status.capacity and allocatable it finds. The
// nodes carry no taint, so ordinary pods schedule onto them without tolerations.
func kwokNode(name string, o Options) (*corev1.Node, error) {
	cpu, err := resource.ParseQuantity(o.NodeCPU)
	if err != nil {
		return nil, fmt.Errorf("node cpu %q: %w", o.NodeCPU, err)
	}
	memory, err := resource.ParseQuantity(o.NodeMemory)
	if err != nil {
		return nil, fmt.Errorf("node memory %q: %w", o.NodeMemory, err)
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    cpu,
		corev1.ResourceMemory: memory,
		corev1.ResourcePods:   *resource.NewQuantity(int64(o.NodeMaxPods), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				NodeTypeLabel:          "kwok",
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
			},
		},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources.DeepCopy()},
	}, nil
}

// createNodes creates the cluster's kwok nodes; existing ones are left as they are.
func createNodes(ctx context.Context, client kubernetes.Interface, o Options) error {
	for i := range o.Nodes {
		node, err := kwokNode(nodeName(i), o)
		if err != nil {
			return err
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
	}
	return nil
}

// nodeSchedulable reports whether a node is Ready and rid of the taints that keep
// pods off a node that has not reported in yet.
func nodeSchedulable(n *corev1.Node) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return ready && !n.Spec.Unschedulable
}
