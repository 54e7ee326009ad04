package quota

import (
	"maps"
	"slices"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// FlavorFromAPI converts a Flavor object. It copies the labels and tolerations, so the
// core never shares a map or slice with the informer's cache.
func FlavorFromAPI(f *v1alpha1.Flavor) Flavor {
	return Flavor{
		Name:        f.Name,
		NodeLabels:  maps.Clone(f.Spec.NodeLabels),
		Tolerations: slices.Clone(f.Spec.Tolerations),
	}
}

// placeholder: the lead's branch replaces this file's two methods

// UpsertFlavor adds or replaces a flavor.
func (q *AdmissionQueue) UpsertFlavor(f Flavor) {}

// DeleteFlavor forgets a flavor.
func (q *AdmissionQueue) DeleteFlavor(name string) {}
