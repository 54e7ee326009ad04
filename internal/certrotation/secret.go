package certrotation

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// secretKeeperResync is how often the keeper looks at its informer's store again, in case
// a delete event was missed.
const secretKeeperResync = 10 * time.Minute

// secretKeeper creates the rotator's Secret when it is missing: cert-controller fills a
// Secret but never creates one, so once deleted (by hand, by a cleanup script) the
// webhook's certificate could never be renewed and a leader that starts without it would
// stop. The keeper creates it empty, on the leader, when it starts and whenever the Secret
// is deleted; cert-controller sees the new Secret, finds no CA in it, issues a new CA and
// serving certificate and injects the new CA into the caBundles.
//
// The Secret it creates keeps the labels and annotations of the one deleted (Helm's
// ownership among them, so `helm upgrade` still owns it) and is owned (ownerReferences)
// by the webhook configuration, or else the first APIService, that the CA is injected
// into: when an uninstall deletes those, the garbage collector deletes the Secret that a
// keeper still running recreated, instead of leaving it behind.
type secretKeeper struct {
	// client watches the one Secret (a field selector on its name, which the
	// rotator's Role allows) and creates it.
	client kubernetes.Interface
	// reader gets the owner's UID.
	reader client.Reader
	secret types.NamespacedName
	// owner is the object the recreated Secret belongs to.
	owner metav1.OwnerReference
	log   logr.Logger
}

var _ manager.LeaderElectionRunnable = (*secretKeeper)(nil)

func (*secretKeeper) NeedLeaderElection() bool { return true }

// ownerOf is the webhook configuration of c, or its first APIService: what the rotator
// injects the CA into (Validate requires one), with no UID yet.
func ownerOf(c Config) metav1.OwnerReference {
	if c.WebhookConfiguration != "" {
		return metav1.OwnerReference{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration", Name: c.WebhookConfiguration}
	}
	return metav1.OwnerReference{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: c.APIServices[0]}
}

// Start creates the Secret if it is missing, then again each time it is deleted, until
// ctx ends. A create that keeps failing past retry.DefaultBackoff is logged, and tried
// again at the next event or resync.
func (k *secretKeeper) Start(ctx context.Context) error {
	missing := make(chan map[string]map[string]string, 1)
	signal := func(last *corev1.Secret) {
		meta := map[string]map[string]string{}
		if last != nil {
			meta["labels"], meta["annotations"] = last.Labels, last.Annotations
		}
		select {
		case missing <- meta:
		default: // a recreation is pending already
		}
	}
	lw := cache.NewListWatchFromClient(k.client.CoreV1().RESTClient(), "secrets", k.secret.Namespace,
		fields.OneTermEqualSelector("metadata.name", k.secret.Name))
	informer := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, secretKeeperResync, cache.Indexers{})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			s, _ := obj.(*corev1.Secret)
			signal(s)
		},
	}); err != nil {
		return fmt.Errorf("watching Secret %s: %w", k.secret, err)
	}
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // ctx ended
	}
	if len(informer.GetStore().List()) == 0 {
		signal(nil)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case meta := <-missing:
			if err := retry.OnError(retry.DefaultBackoff, func(error) bool { return ctx.Err() == nil }, func() error {
				return k.create(ctx, meta["labels"], meta["annotations"])
			}); err != nil && ctx.Err() == nil {
				k.log.Error(err, "Cannot recreate the certificate Secret; trying again at the next change", "secret", klog.KRef(k.secret.Namespace, k.secret.Name))
			}
		}
	}
}

// create creates the Secret empty, with labels and annotations, owned by k.owner; one that
// exists already is left alone.
func (k *secretKeeper) create(ctx context.Context, labels, annotations map[string]string) error {
	owner := k.owner
	var meta metav1.PartialObjectMetadata
	meta.SetGroupVersionKind(schema.FromAPIVersionAndKind(owner.APIVersion, owner.Kind))
	if err := k.reader.Get(ctx, types.NamespacedName{Name: owner.Name}, &meta); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("getting %s %s: %w", owner.Kind, owner.Name, err)
		}
		// Uninstalled: nothing uses the certificate any more.
		k.log.Info("Not recreating the certificate Secret: what it serves is gone", "secret", klog.KRef(k.secret.Namespace, k.secret.Name),
			"owner", owner.Kind+"/"+owner.Name)
		return nil
	}
	owner.UID = meta.UID
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: k.secret.Namespace, Name: k.secret.Name,
			Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Type: corev1.SecretTypeOpaque,
	}
	_, err := k.client.CoreV1().Secrets(k.secret.Namespace).Create(ctx, s, metav1.CreateOptions{FieldManager: FieldOwner})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating Secret %s: %w", k.secret, err)
	}
	k.log.Info("Created the missing certificate Secret; the rotator issues a new CA and serving certificate into it",
		"secret", klog.KRef(k.secret.Namespace, k.secret.Name))
	return nil
}
