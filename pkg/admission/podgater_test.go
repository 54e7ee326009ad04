package admission

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

const quotaGate = "quotagate.io/budget"

// makePod builds a pod of team-a named by the API server from "web-", with its
// apiVersion and kind as an admission review carries them.
func makePod() *podtest.Builder {
	return podtest.New("").GenerateName("web-").NS("team-a").TypeMeta()
}

// The identities the tests send requests as.
var (
	tenant = authenticationv1.UserInfo{
		Username: "system:serviceaccount:team-a:tenant",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"},
	}
	node                = authenticationv1.UserInfo{Username: "system:node:n1", Groups: []string{NodesGroup, "system:authenticated"}}
	daemonSetController = authenticationv1.UserInfo{
		Username: DaemonSetControllerUser,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
	}
	controllerManager = authenticationv1.UserInfo{Username: ControllerManagerUser, Groups: []string{"system:authenticated"}}
	clusterAdmin      = authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}
	// Half a node's identity is not a node.
	nodeNameOnly  = authenticationv1.UserInfo{Username: "system:node:n1", Groups: []string{"system:authenticated"}}
	nodeGroupOnly = authenticationv1.UserInfo{Username: "mallory", Groups: []string{NodesGroup}}
	noGroups      = authenticationv1.UserInfo{Username: "system:node:n1"}
)

// skipCase is a pod, the identity that creates it, the DaemonSets the
// administrator exempts, and what SkipReasonFor must answer.
type skipCase struct {
	pod    *corev1.Pod
	user   authenticationv1.UserInfo
	exempt []DaemonSetRef
	want   SkipReason
}

// skipCases are the pod shapes and identities that TestSkipReasonFor checks
// against SkipReasonFor and TestMatchConditions against the shipped CEL.
func skipCases() map[string]skipCase {
	mirror := func() *podtest.Builder {
		return makePod().NodeName("n1").Annotation(corev1.MirrorPodAnnotationKey, "x")
	}
	daemon := func() *podtest.Builder { return makePod().Owner("apps/v1", "DaemonSet", "owner", true) }
	// The builders' pods are in team-a and owned by "owner".
	exempt := []DaemonSetRef{{Namespace: "ops", Name: "agent"}, {Namespace: "team-a", Name: "owner"}}
	return map[string]skipCase{
		"plain pod":                          {pod: makePod().Obj(), user: tenant, want: ""},
		"other gate":                         {pod: makePod().Gates("a.io/x").Obj(), user: tenant, want: ""},
		"deployment pod":                     {pod: makePod().Owner("apps/v1", "ReplicaSet", "owner", true).Obj(), user: tenant, want: ""},
		"job pod":                            {pod: makePod().Owner("batch/v1", "Job", "owner", true).Obj(), user: tenant, want: ""},
		"already gated":                      {pod: makePod().Gates("a.io/x", quotaGate).Obj(), user: tenant, want: SkipAlreadyGated},
		"mirror pod from a node":             {pod: mirror().Obj(), user: node, want: SkipMirrorPod},
		"mirror pod from another node":       {pod: mirror().NodeName("n2").Obj(), user: node, want: SkipMirrorPod},
		"mirror pod from a tenant":           {pod: mirror().Obj(), user: tenant, want: ""},
		"mirror pod without nodeName":        {pod: makePod().Annotation(corev1.MirrorPodAnnotationKey, "x").Obj(), user: tenant, want: ""},
		"mirror pod from a cluster admin":    {pod: mirror().Obj(), user: clusterAdmin, want: ""},
		"mirror pod from a node-like user":   {pod: mirror().Obj(), user: nodeNameOnly, want: ""},
		"mirror pod from the nodes group":    {pod: mirror().Obj(), user: nodeGroupOnly, want: ""},
		"mirror pod from a user w/o groups":  {pod: mirror().Obj(), user: noGroups, want: ""},
		"bound pod from a node":              {pod: makePod().NodeName("n1").Obj(), user: node, want: SkipNodeName},
		"bound pod from a tenant":            {pod: makePod().NodeName("n1").Obj(), user: tenant, want: ""},
		"bound pod from a node-like user":    {pod: makePod().NodeName("n1").Obj(), user: nodeNameOnly, want: ""},
		"daemonset pod from a tenant":        {pod: daemon().Obj(), user: tenant, want: ""},
		"daemonset pod from a node":          {pod: daemon().Obj(), user: node, want: ""},
		"daemonset pod from a cluster admin": {pod: daemon().Obj(), user: clusterAdmin, want: ""},
		"daemonset pod from a tenant, already gated": {
			pod: daemon().Gates(quotaGate).Obj(), user: tenant, want: SkipAlreadyGated,
		},
		// A DaemonSet that no administrator exempted: its controller's pods
		// are gated (a tenant with edit may create DaemonSets).
		"daemonset pod from its controller":   {pod: daemon().Obj(), user: daemonSetController, want: ""},
		"daemonset pod from the shared kcm":   {pod: daemon().Obj(), user: controllerManager, want: ""},
		"bound daemonset pod from controller": {pod: daemon().NodeName("n1").Obj(), user: daemonSetController, want: ""},
		// An exempt DaemonSet: its controller's pods only.
		"exempt daemonset pod from its controller": {
			pod: daemon().Obj(), user: daemonSetController, exempt: exempt, want: SkipExemptDaemonSet,
		},
		"exempt daemonset pod from the shared kcm": {
			pod: daemon().Obj(), user: controllerManager, exempt: exempt, want: SkipExemptDaemonSet,
		},
		"bound exempt daemonset pod from its controller": {
			pod: daemon().NodeName("n1").Obj(), user: daemonSetController, exempt: exempt, want: SkipExemptDaemonSet,
		},
		"exempt daemonset pod from a tenant":        {pod: daemon().Obj(), user: tenant, exempt: exempt, want: ""},
		"exempt daemonset pod from a cluster admin": {pod: daemon().Obj(), user: clusterAdmin, exempt: exempt, want: ""},
		"exempt daemonset pod from a node":          {pod: daemon().Obj(), user: node, exempt: exempt, want: ""},
		"exempt daemonset pod, already gated": {
			pod: daemon().Gates(quotaGate).Obj(), user: daemonSetController, exempt: exempt, want: SkipExemptDaemonSet,
		},
		"another daemonset than the exempt ones": {
			pod: daemon().Obj(), user: daemonSetController, exempt: exempt[:1], want: "",
		},
		"the exempt name in another namespace": {
			pod: daemon().Obj(), user: daemonSetController, exempt: []DaemonSetRef{{Namespace: "team-b", Name: "owner"}}, want: "",
		},
		"an exempt name that is not an apps DaemonSet": {
			pod: makePod().Owner("apps.kruise.io/v1alpha1", "DaemonSet", "owner", true).Obj(), user: daemonSetController, exempt: exempt, want: "",
		},
		"exempt daemonset owner that is not the controller": {
			pod: makePod().Owner("apps/v1", "DaemonSet", "owner", false).Obj(), user: daemonSetController, exempt: exempt, want: "",
		},
		"replicaset of an exempt name from the DS controller": {
			pod: makePod().Owner("apps/v1", "ReplicaSet", "owner", true).Obj(), user: daemonSetController, exempt: exempt, want: "",
		},
	}
}

func TestSkipReasonFor(t *testing.T) {
	for name, tc := range skipCases() {
		t.Run(name, func(t *testing.T) {
			if got := SkipReasonFor(tc.pod, tc.user, quotaGate, tc.exempt...); got != tc.want {
				t.Errorf("SkipReasonFor() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseDaemonSetRef(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    DaemonSetRef
		wantErr string
	}{
		"namespace/name":        {in: "monitoring/node-exporter", want: DaemonSetRef{Namespace: "monitoring", Name: "node-exporter"}},
		"a name with dots":      {in: "ops/agent.v2", want: DaemonSetRef{Namespace: "ops", Name: "agent.v2"}},
		"no namespace":          {in: "node-exporter", wantErr: `exempt DaemonSet "node-exporter": want namespace/name`},
		"empty":                 {in: "", wantErr: `exempt DaemonSet "": want namespace/name`},
		"a quote":               {in: "ops/a'b", wantErr: `exempt DaemonSet "ops/a'b": name: a lowercase RFC 1123 subdomain`},
		"an upper-case name":    {in: "ops/Agent", wantErr: "name: a lowercase RFC 1123 subdomain"},
		"a namespace with dots": {in: "a.b/agent", wantErr: "namespace: must not contain dots"},
		"two slashes":           {in: "ops/a/b", wantErr: "name: a lowercase RFC 1123 subdomain"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseDaemonSetRef(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseDaemonSetRef(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want || got.String() != tc.in {
				t.Errorf("ParseDaemonSetRef(%q) = %v (%q), %v; want %v", tc.in, got, got.String(), err, tc.want)
			}
		})
	}
}

func TestPodGaterServeHTTP(t *testing.T) {
	tests := map[string]struct {
		body        []byte
		contentType string
		exempt      []DaemonSetRef
		want        answer
	}{
		"pod without gates gets the whole list": {
			body: review(t, admissionv1.Create, makePod().Obj()),
			want: answer{Allowed: true, Code: 200,
				Patch: `[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"quotagate.io/budget"}]}]`},
		},
		"pod with another gate gets an append": {
			body: review(t, admissionv1.Create, makePod().Gates("a.io/x").Obj()),
			want: answer{Allowed: true, Code: 200,
				Patch: `[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"quotagate.io/budget"}}]`},
		},
		"pod with the gate is left alone": {
			body: review(t, admissionv1.Create, makePod().Gates(quotaGate).Obj()),
			want: answer{Allowed: true, Code: 200, Message: "already-gated"},
		},
		"mirror pod from a node is skipped": {
			body: reviewAs(t, admissionv1.Create, makePod().NodeName("n1").Annotation(corev1.MirrorPodAnnotationKey, "abc").Obj(), node),
			want: answer{Allowed: true, Code: 200, Message: "mirror-pod"},
		},
		"bound pod from a node is skipped": {
			body: reviewAs(t, admissionv1.Create, makePod().NodeName("n1").Obj(), node),
			want: answer{Allowed: true, Code: 200, Message: "node-name"},
		},
		"daemonset pod from its controller is gated": {
			body: reviewAs(t, admissionv1.Create, makePod().Owner("apps/v1", "DaemonSet", "owner", true).Obj(), daemonSetController),
			want: answer{Allowed: true, Code: 200,
				Patch: `[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"quotagate.io/budget"}]}]`},
		},
		"exempt daemonset pod from its controller is skipped": {
			body:   reviewAs(t, admissionv1.Create, makePod().Owner("apps/v1", "DaemonSet", "owner", true).Obj(), daemonSetController),
			exempt: []DaemonSetRef{{Namespace: "team-a", Name: "owner"}},
			want:   answer{Allowed: true, Code: 200, Message: "exempt-daemonset"},
		},
		"daemonset pod from a tenant is gated": {
			body: review(t, admissionv1.Create, makePod().Owner("apps/v1", "DaemonSet", "owner", true).Obj()),
			want: answer{Allowed: true, Code: 200,
				Patch: `[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"quotagate.io/budget"}]}]`},
		},
		"mirror-annotated pod from a tenant is gated": {
			body: review(t, admissionv1.Create, makePod().Annotation(corev1.MirrorPodAnnotationKey, "abc").Obj()),
			want: answer{Allowed: true, Code: 200,
				Patch: `[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"quotagate.io/budget"}]}]`},
		},
		"bound pod from a tenant is refused": {
			body: review(t, admissionv1.Create, makePod().NodeName("n1").Annotation(corev1.MirrorPodAnnotationKey, "abc").Obj()),
			want: answer{Code: 403, Message: "spec.nodeName (n1) may only be set on a new pod by a node " +
				"(user system:node:<name> in group system:nodes), not by system:serviceaccount:team-a:tenant: " +
				"in namespace team-a, labelled quotagate.io/enabled=true, pods wait for their budget behind " +
				"the scheduling gate quotagate.io/budget, which cannot be combined with spec.nodeName; " +
				"leave spec.nodeName empty and choose the node with a nodeSelector on kubernetes.io/hostname"},
		},
		"bound pod from a tenant that carries the gate is left to the API server": {
			body: review(t, admissionv1.Create, makePod().NodeName("n1").Gates(quotaGate).Obj()),
			want: answer{Allowed: true, Code: 200, Message: "already-gated"},
		},
		"update is skipped": {
			body: review(t, admissionv1.Update, makePod().Obj()),
			want: answer{Allowed: true, Code: 200, Message: "not-create"},
		},
		"undecodable pod is a 400": {
			body: reviewRaw(t, admissionv1.Create, podKind, []byte(`{"metadata":{"annotations":["not","a","map"]}}`)),
			want: answer{Code: 400, Message: "decoding pod: json: cannot unmarshal array into Go struct field .metadata.annotations of type map[string]string"},
		},
		"missing object is a 400": {
			body: reviewRaw(t, admissionv1.Create, podKind, nil),
			want: answer{Code: 400, Message: "admission request carries no object"},
		},
		"not a pod is skipped": {
			body: reviewRaw(t, admissionv1.Create, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, []byte(`{}`)),
			want: answer{Allowed: true, Code: 200, Message: "not-pod"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := NewWebhook(NewPodGater(quotaGate, newTestMetrics(t), tc.exempt...))
			got := serve(t, h, tc.body, "application/json")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// Requests the webhook cannot read at all get a clear 4xx answer, not a
// crash or a silent allow.
func TestPodGaterRefusesBadRequests(t *testing.T) {
	tests := map[string]struct {
		body        []byte
		contentType string
		wantCode    int32
		wantMessage string
	}{
		"not JSON": {
			body: []byte(`{"kind":`), contentType: "application/json",
			wantCode: 400, wantMessage: "json parse error",
		},
		"wrong content type": {
			body: review(t, admissionv1.Create, makePod().Obj()), contentType: "text/plain",
			wantCode: 400, wantMessage: "contentType=text/plain, expected application/json",
		},
		"oversized": {
			body:        append(append([]byte(`{"request":{"object":"`), bytes.Repeat([]byte("x"), 8<<20)...), `"}}`...),
			contentType: "application/json",
			wantCode:    413, wantMessage: "request entity is too large; limit is 7340032 bytes",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := serve(t, NewWebhook(NewPodGater(quotaGate, newTestMetrics(t))), tc.body, tc.contentType)
			if got.Allowed || got.Code != tc.wantCode || !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("answer = %+v, want refused with code %d and message containing %q", got, tc.wantCode, tc.wantMessage)
			}
		})
	}
}

func TestNewWebhookRecoversPanic(t *testing.T) {
	calls := 0
	h := NewWebhook(admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return admission.Allowed("fine")
	}))
	body := review(t, admissionv1.Create, makePod().Obj())

	got := serve(t, h, body, "application/json")
	want := answer{Code: 500, Message: "panic: boom [recovered]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer to the panicking request (-want +got):\n%s", diff)
	}
	// The same webhook keeps serving.
	got = serve(t, h, body, "application/json")
	if diff := cmp.Diff(answer{Allowed: true, Code: 200, Message: "fine"}, got); diff != "" {
		t.Errorf("answer to the next request (-want +got):\n%s", diff)
	}
}

func TestPodGaterMetrics(t *testing.T) {
	m := newTestMetrics(t)
	h := NewWebhook(NewPodGater(quotaGate, m, DaemonSetRef{Namespace: "team-a", Name: "owner"}))
	for _, body := range [][]byte{
		review(t, admissionv1.Create, makePod().Obj()),
		review(t, admissionv1.Create, makePod().Gates("a.io/x").Obj()),
		review(t, admissionv1.Create, makePod().Gates(quotaGate).Obj()),
		reviewAs(t, admissionv1.Create, makePod().Owner("apps/v1", "DaemonSet", "owner", true).Obj(), daemonSetController),
		reviewAs(t, admissionv1.Create, makePod().Owner("apps/v1", "DaemonSet", "owner", true).Obj(), controllerManager),
		// Another DaemonSet's pod: gated.
		reviewAs(t, admissionv1.Create, makePod().Owner("apps/v1", "DaemonSet", "tenant-ds", true).Obj(), daemonSetController),
		review(t, admissionv1.Create, makePod().NodeName("n1").Obj()),
		reviewRaw(t, admissionv1.Create, podKind, []byte(`[]`)),
	} {
		serve(t, h, body, "application/json")
	}

	got := map[string]float64{
		"requests gated":        testutil.ToFloat64(m.requests.WithLabelValues(resultGated)),
		"requests skipped":      testutil.ToFloat64(m.requests.WithLabelValues(resultSkipped)),
		"requests denied":       testutil.ToFloat64(m.requests.WithLabelValues(resultDenied)),
		"requests errored":      testutil.ToFloat64(m.requests.WithLabelValues(resultErrored)),
		"skipped already-gated": testutil.ToFloat64(m.podsSkipped.WithLabelValues(string(SkipAlreadyGated))),
		"skipped daemonset":     testutil.ToFloat64(m.podsSkipped.WithLabelValues(string(SkipExemptDaemonSet))),
	}
	want := map[string]float64{
		"requests gated":        3,
		"requests skipped":      3,
		"requests denied":       1,
		"requests errored":      1,
		"skipped already-gated": 1,
		"skipped daemonset":     2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

func TestNewMetricsTwiceSharesCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("first NewMetrics: %v", err)
	}
	b, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("second NewMetrics: %v", err)
	}
	a.observe(resultGated)
	if got := testutil.ToFloat64(b.requests.WithLabelValues(resultGated)); got != 1 {
		t.Errorf("second Metrics sees %v requests gated, want 1", got)
	}
}

func newTestMetrics(t testing.TB) *Metrics {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	return m
}
