package controller

import (
	"context"
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The reasons an ungate patch failed, for the quotagate_ungate_errors_total metric. None
// of them proves that the patch did not apply, except that the pod is gone: a response
// can be lost after the API server applied the patch, and a retry's `test` fails when
// the first try already removed the gate. ungate settles each with a fresh read.
const reasonNotFound = "not_found"

// reasonClaimNotPinned counts the ungates not sent because a ResourceClaim the pod is
// charged for could not be pinned (claimPins).
const reasonClaimNotPinned = "claim_not_pinned"

// classify returns the metric reason of an ungate patch's error ("" for success).
func classify(err error) string {
	switch {
	case err == nil:
		return ""
	case apierrors.IsNotFound(err):
		return reasonNotFound
	case apierrors.IsConflict(err):
		return "conflict"
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		// A failed JSON patch `test` op: the gate or the resourceVersion is no longer
		// what the patch was built from.
		return "test_failed"
	case apierrors.IsTooManyRequests(err):
		return "too_many_requests"
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return "server_error"
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return "network"
	}
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Code >= 500 {
		return "server_error"
	}
	return "other"
}
