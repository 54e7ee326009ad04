package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/gates"
)

// The uninstall path. The chart's pre-delete hook runs
//
//	manager release --all --webhook-configuration <release>-webhook
//
// which, in this order:
//
//  1. deletes the release's MutatingWebhookConfiguration, so that no new pod is gated
//     and no pod create depends on a webhook that Helm is about to delete (with
//     failurePolicy Fail, a create in an opted-in namespace would otherwise fail from
//     the moment the webhook's Service is gone);
//  2. lists pods page by page (Limit/Continue; memory holds one page) and removes the
//     quotagate gate from every pod that carries it, whatever its namespace: a namespace
//     that was opted in once may still hold gated pods, so no namespace is skipped;
//  3. once the API servers have had WebhookDrain to see the configuration gone, runs a
//     final pass, for the pods the webhook gated between step 2's list of their page and
//     the moment the API server stopped calling it;
//  4. with --all (ReleaseOptions.UnpinClaims), removes the manager's finalizer from every
//     ResourceClaim it pinned (claimPins): no manager will release them any more.
//
// Every step is idempotent (a deleted configuration is not an error, a pod without the
// gate is left alone), so the hook's Job can simply be retried after a partial failure.

// Defaults of ReleaseOptions.
const (
	DefaultReleasePageSize     = 500
	DefaultReleaseWorkers      = 8
	DefaultReleaseWebhookDrain = 5 * time.Second
)

const (
	// releaseAttempts bounds the patches tried on one pod that keeps changing under us
	// or keeps failing transiently.
	releaseAttempts = 8
	// releaseListRestarts bounds how often a pass starts its list over because the
	// continue token expired (etcd compacted the revision the list started at).
	releaseListRestarts = 5
	// releaseMaxErrors bounds the per-pod errors a pass keeps to report: the memory of
	// a pass stays bounded by its page size even if every pod fails.
	releaseMaxErrors = 10
)

// ReleaseOptions says what ReleaseAll releases and how.
type ReleaseOptions struct {
	// Namespace limits the release to one namespace; "" is every namespace.
	Namespace string
	// Gate is the scheduling gate to remove.
	Gate string
	// WebhookConfiguration, if set, is the MutatingWebhookConfiguration deleted before
	// anything is released, and the reason for a final pass.
	WebhookConfiguration string
	// AdmissionPolicyBinding, if set, is the MutatingAdmissionPolicyBinding of the gate
	// policy (admission mode policy), deleted like WebhookConfiguration and for the same
	// reason.
	AdmissionPolicyBinding string
	// PageSize is the number of pods listed per request.
	PageSize int64
	// Workers is the number of pods released concurrently within a page.
	Workers int
	// WebhookDrain is how long after the webhook configuration's deletion an API server
	// may still call the webhook (its configuration informer lags behind etcd); the
	// final pass starts no earlier.
	WebhookDrain time.Duration
	// RetryBackoff is the first wait before a pod's patch is retried; it doubles.
	RetryBackoff time.Duration
	// UnpinClaims, once the pods are released, removes the manager's finalizer
	// (v1alpha1.ChargedFinalizer) from every ResourceClaim of the cluster: at uninstall,
	// no manager is left to remove it once the claims' pods end. Every namespace only.
	UnpinClaims bool
}

func (o ReleaseOptions) withDefaults() ReleaseOptions {
	if o.PageSize <= 0 {
		o.PageSize = DefaultReleasePageSize
	}
	if o.Workers <= 0 {
		o.Workers = DefaultReleaseWorkers
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 50 * time.Millisecond
	}
	return o
}

// ReleaseAll takes the webhook out (if opts.WebhookConfiguration is set), then removes
// opts.Gate from every gated pod without any quota check, and returns how many pods it
// released. See the comment above for the order and why. Errors on single pods do not
// stop the pass: every other pod is still released, and the error names them.
func ReleaseAll(ctx context.Context, cs kubernetes.Interface, opts ReleaseOptions) (int, error) {
	opts = opts.withDefaults()
	if opts.Gate == "" {
		return 0, errors.New("releasing pods: no gate given")
	}
	if opts.UnpinClaims && opts.Namespace != "" {
		return 0, errors.New("releasing pods: claims are unpinned in every namespace only")
	}
	log := logr.FromContextOrDiscard(ctx)
	var removedAt time.Time
	if name := opts.WebhookConfiguration; name != "" {
		err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		switch {
		case apierrors.IsNotFound(err):
			log.Info("Webhook configuration already gone", "mutatingWebhookConfiguration", name)
		case err != nil:
			// Releasing while the webhook still gates new pods would strand the pods
			// created after the list: stop here and let the Job retry.
			return 0, fmt.Errorf("deleting MutatingWebhookConfiguration %s: %w", name, err)
		default:
			log.Info("Deleted the webhook configuration", "mutatingWebhookConfiguration", name)
		}
		removedAt = time.Now()
	}
	if name := opts.AdmissionPolicyBinding; name != "" {
		err := cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		switch {
		case apierrors.IsNotFound(err):
			log.Info("Gate policy binding already gone", "mutatingAdmissionPolicyBinding", name)
		case err != nil:
			return 0, fmt.Errorf("deleting MutatingAdmissionPolicyBinding %s: %w", name, err)
		default:
			log.Info("Deleted the gate policy binding", "mutatingAdmissionPolicyBinding", name)
		}
		removedAt = time.Now()
	}

	r := &releaser{cs: cs, opts: opts}
	released, err := r.releasePods(ctx, removedAt)
	if !opts.UnpinClaims {
		return released, err
	}
	unpinned, unpinErr := unpinAllClaims(ctx, cs, opts.PageSize)
	log.Info("Unpinned ResourceClaims", "unpinned", unpinned)
	return released, errors.Join(err, unpinErr)
}

// releasePods runs the passes: one, and a final one once the webhook (or gate policy)
// removed at removedAt can no longer gate a pod.
func (r *releaser) releasePods(ctx context.Context, removedAt time.Time) (int, error) {
	opts, log := r.opts, logr.FromContextOrDiscard(ctx)
	released, err := r.pass(ctx)
	log.Info("Released gated pods", "pass", 1, "released", released)
	if opts.WebhookConfiguration == "" && opts.AdmissionPolicyBinding == "" {
		return released, err
	}
	if wait := time.Until(removedAt.Add(opts.WebhookDrain)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return released, errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
	late, lateErr := r.pass(ctx)
	log.Info("Released gated pods", "pass", 2, "released", late)
	return released + late, errors.Join(err, lateErr)
}

// releaser runs the passes of one ReleaseAll.
type releaser struct {
	cs   kubernetes.Interface
	opts ReleaseOptions
}

// pass lists every pod of opts.Namespace a page at a time and releases the gated ones.
// An expired continue token starts the list over (already released pods are no longer
// gated, so the second walk only patches what is left).
func (r *releaser) pass(ctx context.Context) (int, error) {
	var (
		released atomic.Int64
		errs     podErrors
		cont     string
		restarts int
	)
	for {
		list, err := r.cs.CoreV1().Pods(r.opts.Namespace).List(ctx, metav1.ListOptions{Limit: r.opts.PageSize, Continue: cont})
		if apierrors.IsResourceExpired(err) && cont != "" && restarts < releaseListRestarts {
			logr.FromContextOrDiscard(ctx).V(loglevel.Events).Info("Continue token expired, listing pods again from the start")
			restarts++
			cont = ""
			continue
		}
		if err != nil {
			return int(released.Load()), errors.Join(errs.err(), fmt.Errorf("listing pods: %w", err))
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(r.opts.Workers)
		for i := range list.Items {
			pod := &list.Items[i]
			if !gates.HasGate(pod, r.opts.Gate) {
				continue
			}
			g.Go(func() error {
				ok, err := r.releasePod(gctx, pod)
				if ok {
					released.Add(1)
				}
				if err != nil {
					errs.add(fmt.Errorf("releasing pod %s/%s: %w", pod.Namespace, pod.Name, err))
				}
				return nil // one pod's failure must not stop the others
			})
		}
		_ = g.Wait()
		if cont = list.Continue; cont == "" {
			return int(released.Load()), errs.err()
		}
	}
}

// releasePod removes the gate from pod, re-reading the pod when the patch's test op
// finds it changed (another gate added or removed before ours, a concurrent update),
// and retrying transient failures with a doubling backoff. It reports whether this call
// removed the gate; a pod that is gone or no longer gated needs nothing.
func (r *releaser) releasePod(ctx context.Context, pod *corev1.Pod) (bool, error) {
	pods := r.cs.CoreV1().Pods(pod.Namespace)
	backoff := r.opts.RetryBackoff
	var err error
	for attempt := range releaseAttempts {
		if attempt > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return false, errors.Join(err, ctx.Err())
			case <-t.C:
			}
			backoff *= 2
			fresh, getErr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(getErr) || (getErr == nil && fresh.UID != pod.UID) {
				return false, nil
			}
			if getErr != nil {
				err = fmt.Errorf("reading the pod again: %w", getErr)
				continue
			}
			pod = fresh
		}
		patch, gated := gates.UngatePatch(pod, r.opts.Gate, nil)
		if !gated {
			// Released by someone else, or by an earlier attempt whose response was lost.
			return false, nil
		}
		_, err = pods.Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			logr.FromContextOrDiscard(ctx).V(loglevel.Events).Info("Released pod", "pod", klog.KObj(pod))
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !retriable(err):
			// A denial (the gate guard refusing our identity, RBAC) will not change on
			// retry: report it at once.
			return false, err
		}
	}
	return false, fmt.Errorf("giving up after %d attempts: %w", releaseAttempts, err)
}

// retriable reports whether a failed patch may succeed when tried again on a fresh read
// of the pod: the pod changed (409, or 422 from the patch's test op), or the failure was
// transient.
func retriable(err error) bool {
	switch {
	case apierrors.IsConflict(err), apierrors.IsInvalid(err),
		apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return true
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsBadRequest(err):
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code >= 500
	}
	// Not an API status: a connection reset or a client-side timeout.
	return true
}

// podErrors collects the first releaseMaxErrors errors of a pass and counts the rest.
type podErrors struct {
	mu    sync.Mutex
	kept  []error
	total int
}

func (e *podErrors) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total++
	if len(e.kept) < releaseMaxErrors {
		e.kept = append(e.kept, err)
	}
}

func (e *podErrors) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.total == 0 {
		return nil
	}
	if more := e.total - len(e.kept); more > 0 {
		return errors.Join(append(e.kept, fmt.Errorf("and %d more pods could not be released", more))...)
	}
	return errors.Join(e.kept...)
}
