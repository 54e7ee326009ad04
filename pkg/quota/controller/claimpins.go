package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// maxPinTries bounds the pin patches sent for one claim in one ungate.
const maxPinTries = 3

// claimPins pins the ResourceClaims of admitted pods, and releases them.
//
// A pod is charged for the claims it uses as the core saw them when it decided (each by
// name and UID: quota.Admission.Claims). kube-scheduler allocates whatever claim has that
// name when it schedules the pod, so a claim deleted after the ungate and made again with
// more devices would run under the old charge. So before the ungate patch is sent, each
// claim gets v1alpha1.ChargedFinalizer, added by a JSON patch that tests the claim's UID
// (pinClaim): a claim replaced since the decision is not pinned, and the pod is not
// ungated now (NotSent: the core decides again on the claim that exists). While the
// finalizer is there, a deleted claim stays, terminating (kube-scheduler does not
// allocate it), its name cannot be taken, and the gate guard lets nobody but the manager
// remove the finalizer.
//
// The finalizer is removed (releaseClaim) once no pod that uses the claim may run with
// it. A pod may run with its claims (podMayRun) while
//
//   - its ungate is under way (pinning: from before its pins until its patch is answered);
//   - it is seen without the gate and is not Succeeded or Failed (deleted pods leave the
//     cache once they are gone);
//   - it is seen with the gate, but an ungate patch was sent for it at a version that is
//     not older than the one seen (sent): the patch may still apply. Seen gated at a
//     newer version, none of the manager's patches applied and none can (each is fenced
//     on the version it was built from), as for the core's charge (quota.AdmissionQueue.Done).
//
// Pins and releases of one claim are serialized (locks), and a pod is marked before its
// pins take the claim's lock, so a release never removes a pin that an ungate relies on.
// An error does not prove that a request was not applied:
//
//   - a pin whose answer is an error is settled by reading the claim again; until the
//     finalizer is seen, the pod is not ungated. A pin that applied unseen is released
//     like any other once no pod may run with the claim.
//   - a release is fenced on the claim's resourceVersion. One whose outcome is unknown
//     leaves the claim unsettled: no pin of it is made (its pods are not ungated) until
//     the claim is seen at another version (the release applied or never will) or a
//     retry of the same release gets an answer.
//
// Releases run on the leader only, from a queue that events fill: a pinned claim's event,
// a pod's that ends, is deleted or is seen still gated, and the end of every ungate. A new
// leader checks every pinned claim once it has caught up, so a claim whose last pod ended
// while no manager ran is released too. What is in memory (pinning, sent, unsettled) is
// lost on a restart: the old leader's requests end within UngateTimeout, before its lease
// can pass to another (see Options.UngateTimeout), as for its ungate patches.
//
// It keeps the pins under way, the patches sent and the releases whose outcome is
// unknown, and the queue of claims to check for release.
type claimPins struct {
	index     *claimIndex   // the claims, and the pods that use each
	pods      podStore      // the pod informer's cache
	client    client.Client // pins and releases
	apiReader client.Reader // fresh reads of a claim
	timeout   time.Duration // of each request (Options.UngateTimeout)
	gate      string        // the scheduling gate (Options.Gate)

	mu sync.Mutex
	// pinning are the pods whose ungate is under way.
	pinning map[types.UID]struct{}
	// sent are the pods an ungate patch was sent for, with the newest resourceVersion one
	// was fenced on.
	sent map[types.UID]string
	// unsettled are the claims (namespace/name) whose finalizer removal may still apply,
	// with the resourceVersion it was fenced on.
	unsettled map[string]string

	locks keyLocks
	queue workqueue.TypedRateLimitingInterface[string]
}

// newClaimPins pins the claims of index's pods: it reads pods from c.pods and claims
// through c.apiReader, and patches them through c.client, so c's clients and pod cache
// must be set.
func newClaimPins(c *Controller, index *claimIndex) *claimPins {
	return &claimPins{
		index:     index,
		pods:      c.pods,
		client:    c.client,
		apiReader: c.apiReader,
		timeout:   c.opts.UngateTimeout,
		gate:      c.opts.Gate,
		pinning:   map[types.UID]struct{}{},
		sent:      map[types.UID]string{},
		unsettled: map[string]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "quotagate_claim_releases"}),
	}
}

// check queues the claim namespace/name to be released if no pod may run with it. Safe on
// a nil claimPins (no DRA): nothing is pinned then.
func (p *claimPins) check(key string) {
	if p != nil {
		p.queue.Add(key)
	}
}

// begin marks a pod whose ungate starts; end unmarks it and queues its claims for a check.
func (p *claimPins) begin(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pinning[uid] = struct{}{}
}

func (p *claimPins) end(uid types.UID, claims []quota.ClaimCharge) {
	p.mu.Lock()
	delete(p.pinning, uid)
	p.mu.Unlock()
	for _, c := range claims {
		p.check(c.Key)
	}
}

// sending records that an ungate patch fenced on rv is about to be sent for a pod.
func (p *claimPins) sending(uid types.UID, rv string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.sent[uid]; !ok || newerVersion(rv, old) {
		p.sent[uid] = rv
	}
}

// forget drops a deleted pod.
func (p *claimPins) forget(uid types.UID) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sent, uid)
}

// mark returns whether a pod's ungate is under way, and the version of the newest ungate
// patch sent for it ("" for none).
func (p *claimPins) mark(uid types.UID) (pinning bool, sent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, pinning = p.pinning[uid]
	return pinning, p.sent[uid]
}

// settle records the outcome of a claim's release as known; unsettle, as unknown for a
// release fenced on rv.
func (p *claimPins) settle(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.unsettled, key)
}

func (p *claimPins) unsettle(key, rv string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unsettled[key] = rv
}

func (p *claimPins) unsettledAt(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rv, ok := p.unsettled[key]
	return rv, ok
}

// errClaimChanged: the claim the pod was charged for is not the one of that name now.
var errClaimChanged = errors.New("not the ResourceClaim the pod was charged for")

// pinClaims pins every claim a pod is charged for, in order. An error means that one of
// them is not pinned, or not known to be: the pod must not be ungated now.
func (p *claimPins) pinClaims(ctx context.Context, claims []quota.ClaimCharge) error {
	for _, cc := range claims {
		if err := p.pinClaim(ctx, cc); err != nil {
			return err
		}
	}
	return nil
}

// pinClaim adds v1alpha1.ChargedFinalizer to the claim cc, if it is still the claim of
// that UID, not being deleted. The pod's mark (claimPins.begin) must be set.
func (p *claimPins) pinClaim(ctx context.Context, cc quota.ClaimCharge) error {
	unlock := p.locks.lock(cc.Key)
	defer unlock()
	if rv, ok := p.unsettledAt(cc.Key); ok {
		return fmt.Errorf("ResourceClaim %s: the removal of %s at resourceVersion %s may still apply", cc.Key, v1alpha1.ChargedFinalizer, rv)
	}
	var last error
	for range maxPinTries {
		claim, gone, err := p.readFresh(ctx, cc.Namespace(), cc.Name())
		switch {
		case err != nil:
			return fmt.Errorf("reading ResourceClaim %s: %w", cc.Key, err)
		case gone:
			return fmt.Errorf("ResourceClaim %s is gone: %w", cc.Key, errClaimChanged)
		case claim.UID != cc.UID:
			return fmt.Errorf("ResourceClaim %s was made again (UID %s, charged %s): %w", cc.Key, claim.UID, cc.UID, errClaimChanged)
		case claim.DeletionTimestamp != nil:
			// kube-scheduler would not allocate it to this pod (even if it is pinned for
			// another that runs with it).
			return fmt.Errorf("ResourceClaim %s is being deleted: %w", cc.Key, errClaimChanged)
		case slices.Contains(claim.Finalizers, v1alpha1.ChargedFinalizer):
			return nil
		}
		last = p.patch(ctx, claim, pinPatch(claim))
		if last == nil {
			return nil
		}
		// The answer may have been lost after the pin applied: read again.
	}
	return fmt.Errorf("pinning ResourceClaim %s: %w", cc.Key, last)
}

// readFresh reads a claim from the API server, not the cache.
func (p *claimPins) readFresh(ctx context.Context, namespace, name string) (claim *resourceapi.ResourceClaim, gone bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	claim = &resourceapi.ResourceClaim{}
	err = p.apiReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim)
	switch {
	case apierrors.IsNotFound(err):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	}
	return claim, false, nil
}

// patch sends a JSON patch to a claim with the request timeout.
func (p *claimPins) patch(ctx context.Context, claim *resourceapi.ResourceClaim, patch []byte) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return p.client.Patch(ctx, claim.DeepCopy(), client.RawPatch(types.JSONPatchType, patch))
}

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// pinPatch adds v1alpha1.ChargedFinalizer to claim: it applies only to that claim (its
// UID) at that version, so it never replaces finalizers it did not see.
func pinPatch(claim *resourceapi.ResourceClaim) []byte {
	ops := []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(claim.UID)},
		{Op: "test", Path: "/metadata/resourceVersion", Value: claim.ResourceVersion},
	}
	if len(claim.Finalizers) == 0 {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/finalizers", Value: []string{v1alpha1.ChargedFinalizer}})
	} else {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/finalizers/-", Value: v1alpha1.ChargedFinalizer})
	}
	return mustJSON(ops)
}

// releasePatch removes the finalizer at index i (v1alpha1.ChargedFinalizer) from claim, at
// that version only: a release decided on a version is void once the claim has changed.
func releasePatch(claim *resourceapi.ResourceClaim, i int) []byte {
	at := "/metadata/finalizers/" + strconv.Itoa(i)
	return mustJSON([]jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(claim.UID)},
		{Op: "test", Path: "/metadata/resourceVersion", Value: claim.ResourceVersion},
		{Op: "test", Path: at, Value: v1alpha1.ChargedFinalizer},
		{Op: "remove", Path: at},
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshalling a JSON patch: %v", err))
	}
	return b
}

// newerVersion reports whether resourceVersion a is newer than b.
func newerVersion(a, b string) bool {
	n, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && n > 0
}

// keyLocks are mutexes by key, made when first locked and dropped when no one holds or
// waits for them.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	refs int
}

// lock locks key and returns its unlock.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
