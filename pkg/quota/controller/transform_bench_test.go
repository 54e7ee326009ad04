package controller

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkCompactPod is the informer transform's cost for one pod event: every event
// of every pod in the cluster goes through it, in the informer's one goroutine, before
// the manager's handler sees it. The pods are the bench's gated pods as the API server
// sends them (apiPodJSON), decoded beforehand.
func BenchmarkCompactPod(b *testing.B) {
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		pods[i] = &corev1.Pod{}
		if err := json.Unmarshal(apiPodJSON(i), pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := CompactPod(pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
	}
}
