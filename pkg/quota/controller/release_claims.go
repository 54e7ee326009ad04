package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/loglevel"
)

// unpinAllClaims removes v1alpha1.ChargedFinalizer from every ResourceClaim of the
// cluster, a page of pageSize at a time, and returns how many it unpinned. It is the
// uninstall's last step (ReleaseOptions.UnpinClaims): with no manager left to release
// them, the claims it pinned could never be deleted. A cluster that does not serve
// resource.k8s.io/v1 has none. Errors on single claims do not stop the others.
func unpinAllClaims(ctx context.Context, cs kubernetes.Interface, pageSize int64) (int, error) {
	claims := cs.ResourceV1().ResourceClaims("")
	var errs podErrors
	unpinned, cont := 0, ""
	for {
		list, err := claims.List(ctx, metav1.ListOptions{Limit: pageSize, Continue: cont})
		if apierrors.IsNotFound(err) && cont == "" {
			return 0, nil // resource.k8s.io/v1 is not served: nothing was pinned
		}
		if err != nil {
			return unpinned, errors.Join(errs.err(), fmt.Errorf("listing ResourceClaims: %w", err))
		}
		for i := range list.Items {
			claim := &list.Items[i]
			if !slices.Contains(claim.Finalizers, v1alpha1.ChargedFinalizer) {
				continue
			}
			ok, err := unpinClaim(ctx, cs, claim)
			if ok {
				unpinned++
			}
			if err != nil {
				errs.add(fmt.Errorf("unpinning ResourceClaim %s/%s: %w", claim.Namespace, claim.Name, err))
			}
		}
		if cont = list.Continue; cont == "" {
			return unpinned, errs.err()
		}
	}
}

// unpinClaim removes the finalizer from one claim, reading it again when it changed
// under the patch. It reports whether this call removed it.
func unpinClaim(ctx context.Context, cs kubernetes.Interface, claim *resourceapi.ResourceClaim) (bool, error) {
	claims := cs.ResourceV1().ResourceClaims(claim.Namespace)
	var err error
	for attempt := range releaseAttempts {
		if attempt > 0 {
			fresh, getErr := claims.Get(ctx, claim.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(getErr), getErr == nil && fresh.UID != claim.UID:
				return false, nil
			case getErr != nil:
				err = fmt.Errorf("reading the claim again: %w", getErr)
				continue
			}
			claim = fresh
		}
		i := slices.Index(claim.Finalizers, v1alpha1.ChargedFinalizer)
		if i < 0 {
			return false, nil
		}
		_, err = claims.Patch(ctx, claim.Name, types.JSONPatchType, unpinPatch(claim, i), metav1.PatchOptions{})
		switch {
		case err == nil:
			logr.FromContextOrDiscard(ctx).V(loglevel.Events).Info("Unpinned ResourceClaim", "resourceClaim", klog.KObj(claim))
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !retriable(err):
			return false, err
		}
	}
	return false, fmt.Errorf("giving up after %d attempts: %w", releaseAttempts, err)
}

// unpinPatch removes the finalizer at index i (v1alpha1.ChargedFinalizer) from claim,
// whatever else changed: at uninstall no pin is relied on any more.
func unpinPatch(claim *resourceapi.ResourceClaim, i int) []byte {
	at := "/metadata/finalizers/" + strconv.Itoa(i)
	return mustJSON([]jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(claim.UID)},
		{Op: "test", Path: at, Value: v1alpha1.ChargedFinalizer},
		{Op: "remove", Path: at},
	})
}
