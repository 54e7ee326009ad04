package visibility

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// resources are the API's resources as discovery lists them: subresources of budgets
// only, so that `kubectl get budgets` keeps naming quotagate.io's Budgets,
// pendingpods, one gated pod's place by the pod's name, and podsimulations, the
// create-only what-if.
var resources = []metav1.APIResource{
	{Name: visv1.ResourcePendingPods, SingularName: "pendingpod", Namespaced: true, Kind: visv1.KindPendingPodStatus, Verbs: metav1.Verbs{"get"}},
	{Name: visv1.ResourceBudgets + "/" + visv1.SubresourcePendingPods, Namespaced: true, Kind: visv1.KindPendingPodList, Verbs: metav1.Verbs{"get"}},
	{Name: visv1.ResourceClusterBudgets + "/" + visv1.SubresourcePendingPods, Namespaced: false, Kind: visv1.KindPendingPodList, Verbs: metav1.Verbs{"get"}},
	{Name: visv1.ResourcePodSimulations, SingularName: "podsimulation", Namespaced: true, Kind: visv1.KindPodSimulation, Verbs: metav1.Verbs{"create"}},
}

// installDiscovery serves the group in /apis and the group version's resource list,
// which the aggregator's availability check reads.
func installDiscovery(s *genericapiserver.GenericAPIServer) {
	version := metav1.GroupVersionForDiscovery{GroupVersion: visv1.GroupVersion.String(), Version: visv1.GroupVersion.Version}
	group := metav1.APIGroup{
		TypeMeta:         metav1.TypeMeta{APIVersion: "v1", Kind: "APIGroup"},
		Name:             visv1.GroupName,
		Versions:         []metav1.GroupVersionForDiscovery{version},
		PreferredVersion: version,
	}
	s.DiscoveryGroupManager.AddGroup(group)
	list := metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{APIVersion: "v1", Kind: "APIResourceList"},
		GroupVersion: visv1.GroupVersion.String(),
		APIResources: resources,
	}
	s.Handler.NonGoRestfulMux.Handle("/apis/"+visv1.GroupName, jsonHandler(&group))
	s.Handler.NonGoRestfulMux.Handle("/apis/"+visv1.GroupName+"/", jsonHandler(&group))
	s.Handler.NonGoRestfulMux.Handle(GroupVersionPath, jsonHandler(&list))
}

func jsonHandler(v any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, v) })
}
