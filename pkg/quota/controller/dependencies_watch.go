package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/quotagate/quotagate/pkg/quota/depend"
)

// The watches of the objects pods may wait for (dependencyIndex): which informers, what
// the cache keeps of each object, and how an event reaches the dependency index.

// setupDependencies watches the objects pods may wait for.
func (c *Controller) setupDependencies(ctx context.Context, mgr manager.Manager) error {
	c.dependencies = newDependencyIndex()
	c.dependencies.watchSecrets = c.opts.WatchSecrets
	objs := []client.Object{
		&batchv1.Job{},
		&appsv1.Deployment{},
		&corev1.PersistentVolumeClaim{},
		metadataOnly("ConfigMap"),
	}
	if c.opts.WatchSecrets {
		objs = append(objs, metadataOnly("Secret"))
	}
	served, err := servesPodGroups(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if served {
		objs = append(objs, &schedulingv1beta1.PodGroup{})
	} else {
		log.FromContext(ctx).WithName("quota").Info("The API server does not serve scheduling.k8s.io/v1beta1 PodGroups: a pod that names one waits until it does")
	}
	if served, err = servesComposites(mgr.GetRESTMapper()); err != nil {
		return err
	}
	if served {
		objs = append(objs, &schedulingv1alpha3.CompositePodGroup{})
	}
	for _, obj := range objs {
		inf, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("getting informer for %s: %w", kindOf(obj), err)
		}
		reg, err := inf.AddEventHandler(c.dependencyHandler())
		if err != nil {
			return fmt.Errorf("adding handler for %s: %w", kindOf(obj), err)
		}
		c.registrations = append(c.registrations, reg)
	}
	return nil
}

// metadataOnly is the object a metadata-only informer of a core kind is asked with:
// the manager learns that such objects exist, never what they hold.
func metadataOnly(kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
}

func kindOf(obj client.Object) string {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return m.Kind + " metadata"
	}
	return fmt.Sprintf("%T", obj)
}

// dependencyTransform keeps of a Job, Deployment or PersistentVolumeClaim what
// depend reads: its key and its status' conditions or phase. The manager's cache then
// holds no pod templates or specs of them.
func dependencyTransform(obj any) (any, error) {
	meta := func(m *metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion}
	}
	switch o := obj.(type) {
	case *batchv1.Job:
		return &batchv1.Job{ObjectMeta: meta(&o.ObjectMeta), Status: batchv1.JobStatus{Conditions: o.Status.Conditions}}, nil
	case *appsv1.Deployment:
		return &appsv1.Deployment{ObjectMeta: meta(&o.ObjectMeta), Status: appsv1.DeploymentStatus{Conditions: o.Status.Conditions}}, nil
	case *corev1.PersistentVolumeClaim:
		return &corev1.PersistentVolumeClaim{ObjectMeta: meta(&o.ObjectMeta), Status: corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase}}, nil
	case *metav1.PartialObjectMetadata:
		return &metav1.PartialObjectMetadata{TypeMeta: o.TypeMeta, ObjectMeta: meta(&o.ObjectMeta)}, nil
	}
	return obj, nil // tombstones hold what the store held
}

func (c *Controller) dependencyHandler() toolscache.ResourceEventHandler {
	return eventsOf(c.onDependencyObject)
}

// onDependencyObject applies an event of an object pods may wait for, then gives the
// core again every pod that waits for it.
func (c *Controller) onDependencyObject(obj any, deleted bool) {
	var k dependencyKey
	var s depend.Status
	switch o := obj.(type) {
	case *batchv1.Job:
		k, s = dependencyKey{o.Namespace, depend.Dependency{Kind: depend.Job, Name: o.Name}}, depend.JobStatus(o)
	case *appsv1.Deployment:
		k, s = dependencyKey{o.Namespace, depend.Dependency{Kind: depend.Deployment, Name: o.Name}}, depend.DeploymentStatus(o)
	case *corev1.PersistentVolumeClaim:
		k, s = dependencyKey{o.Namespace, depend.Dependency{Kind: depend.PersistentVolumeClaim, Name: o.Name}}, depend.PVCStatus(o)
	case *schedulingv1beta1.PodGroup:
		c.onPodGroup(o, deleted)
		return
	case *schedulingv1alpha3.CompositePodGroup:
		c.onCompositePodGroup(o, deleted)
		return
	case *metav1.PartialObjectMetadata:
		kind := depend.Kind(o.Kind)
		if kind != depend.Secret && kind != depend.ConfigMap {
			return
		}
		k, s = dependencyKey{o.Namespace, depend.Dependency{Kind: kind, Name: o.Name}}, depend.Exists()
	default:
		return
	}
	x := c.dependencies
	x.mu.Lock()
	old, known := x.objects[k]
	switch {
	case deleted && !known:
		x.mu.Unlock()
		return
	case deleted:
		delete(x.objects, k)
	case known && old == s:
		x.mu.Unlock()
		return // nothing a pod waits for changed
	default:
		x.objects[k] = s
	}
	pods := x.podsOf(k, false)
	x.mu.Unlock()
	c.upsertPods(pods)
}
