package v1alpha1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The resource names quotagate can account, which hard, borrowingLimit and lendingLimit
// accept: the names in AccountableResourceNames, and the names of the forms the patterns
// below match. This file is their one source. The CRD's rule on each of the three fields
// (the XValidation markers on BudgetSpec, a rule and a messageExpression each) is
// AccountableNameCEL written out, because a marker cannot name a Go value; a test in the
// root module (test/crdvalidation) fails when a rule in the generated CRDs is not
// AccountableNameCEL, and when pkg/quota accounts other names than the rule admits.

// AccountableResourceNames are the names accepted as they are: ResourceQuota's names of
// what pods consume ("cpu" is "requests.cpu"; "pods" and "count/pods" count pods).
var AccountableResourceNames = []corev1.ResourceName{
	corev1.ResourcePods, "count/pods",
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
}

// The forms of the other accountable names, as RE2 expressions (CEL's matches).
const (
	// HugePagesNamePattern: hugepages-<size> and requests.hugepages-<size>.
	HugePagesNamePattern = `^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$`
	// DeviceClassNamePattern: the DRA devices of a DeviceClass,
	// <class>.deviceclass.resource.k8s.io/devices.
	DeviceClassNamePattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$`
	// ImplicitExtendedNamePattern: the devices of a DeviceClass with an extended
	// resource name, requests.deviceclass.resource.kubernetes.io/<class>.
	ImplicitExtendedNamePattern = `^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// ExtendedNamePattern: extended resources, <domain>/<name> and
	// requests.<domain>/<name>, except the names extendedNameExceptions refuses.
	ExtendedNamePattern = `^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
)

// extendedNameExceptions are the names of ExtendedNamePattern's form that pods do not
// consume as extended resources, in CEL on k: limits of them, object counts, and names
// in kubernetes.io and k8s.io.
const extendedNameExceptions = `!k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')`

// AccountableNameCEL is the CEL expression, on a name k, that holds when k is
// accountable: the CRD's rule is self.all(k, AccountableNameCEL()).
func AccountableNameCEL() string {
	names := make([]string, len(AccountableResourceNames))
	for i, n := range AccountableResourceNames {
		names[i] = "'" + string(n) + "'"
	}
	return "k in [" + strings.Join(names, ", ") + "]" +
		" || k.matches('" + HugePagesNamePattern + "')" +
		" || k.matches('" + DeviceClassNamePattern + "')" +
		" || k.matches('" + ImplicitExtendedNamePattern + "')" +
		" || (k.matches('" + ExtendedNamePattern + "') && " + extendedNameExceptions + ")"
}
