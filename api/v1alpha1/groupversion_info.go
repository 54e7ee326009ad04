package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "quotagate.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a scheme. It depends only on
	// apimachinery, so the API package stays cheap to import.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &Budget{}, &BudgetList{}, &ClusterBudget{}, &ClusterBudgetList{}, &Flavor{}, &FlavorList{},
		&BudgetWindow{}, &BudgetWindowList{}, &ClusterBudgetWindow{}, &ClusterBudgetWindowList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
