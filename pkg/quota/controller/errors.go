package controller

import (
	"context"
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// outcome is what an ungate patch's error means for the pod's place in the queues.
type outcome int

const (
	// outcomeOK: the gate is gone; the reservation stands.
	outcomeOK outcome = iota
	// outcomeGone: the pod no longer exists (404); forget it.
	outcomeGone
	// outcomeConflict: the pod changed under us (the gate moved or was removed, 409/422);
	// give the reservation back and wait for the informer's view of the pod.
	outcomeConflict
	// outcomeRetry: a transient failure (429, 5xx, timeout, connection error, 403 from a
	// guard that is being fixed); give the reservation back and retry after a backoff.
	outcomeRetry
)

// classify maps an API error to an outcome and a short reason for the
// quotagate_ungate_errors_total metric.
func classify(err error) (outcome, string) {
	switch {
	case err == nil:
		return outcomeOK, ""
	case apierrors.IsNotFound(err):
		return outcomeGone, "not_found"
	case apierrors.IsConflict(err):
		return outcomeConflict, "conflict"
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		// A failed JSON patch `test` op: the gate is no longer where we saw it.
		return outcomeConflict, "test_failed"
	case apierrors.IsTooManyRequests(err):
		return outcomeRetry, "too_many_requests"
	case apierrors.IsForbidden(err):
		return outcomeRetry, "forbidden"
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return outcomeRetry, "timeout"
	case apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return outcomeRetry, "server_error"
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return outcomeRetry, "network"
	}
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Code >= 500 {
		return outcomeRetry, "server_error"
	}
	return outcomeRetry, "other"
}
