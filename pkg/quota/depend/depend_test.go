package depend

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestParse(t *testing.T) {
	got, err := Parse(" job/prepare, PVC/scratch,deployment/db ,secret/creds,configmap/settings,job/prepare")
	if err != nil {
		t.Fatal(err)
	}
	want := []Dependency{{ConfigMap, "settings"}, {Deployment, "db"}, {Job, "prepare"}, {PersistentVolumeClaim, "scratch"}, {Secret, "creds"}}
	if !slices.Equal(got, want) {
		t.Errorf("Parse = %v, want %v", got, want)
	}
	var many []string
	for i := range MaxDependencies + 1 {
		many = append(many, "secret/s"+string(rune('a'+i%26))+strings.Repeat("x", i/26))
	}
	for value, wantErr := range map[string]string{
		"":                       "names no object",
		" , ":                    "names no object",
		"other/job/prepare":      "own namespace",
		"job":                    "not kind/name",
		"pod/web":                `kind "pod" is not one of`,
		"job/Prepare":            "is not an object name",
		"job/":                   "is not an object name",
		strings.Join(many, ","):  "more than the 32",
		"service/db,job/prepare": `kind "service"`,
	} {
		if _, err := Parse(value); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) = %v, want an error with %q", value, err, wantErr)
		}
	}
}

func TestStatuses(t *testing.T) {
	job := func(conds ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "prepare"}, Status: batchv1.JobStatus{Conditions: conds}}
	}
	for _, c := range []struct {
		name string
		got  Status
		want State
		msg  string
	}{
		{"running job", JobStatus(job()), Pending, "waiting for Job prepare to complete"},
		{"complete job", JobStatus(job(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})), Ready, ""},
		{"suspended job", JobStatus(job(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue})), Pending, "to complete"},
		{"failed job", JobStatus(job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"})), Failed,
			"Job prepare failed (BackoffLimitExceeded): it will never complete"},
		{"pending pvc", PVCStatus(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}),
			Pending, "waiting for PersistentVolumeClaim scratch to be Bound (it is Pending)"},
		{"bound pvc", PVCStatus(&corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}), Ready, ""},
		{"lost pvc", PVCStatus(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimLost}}),
			Failed, "lost its volume"},
		{"new deployment", DeploymentStatus(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "db"}}), Pending, "waiting for Deployment db to be Available"},
		{"available deployment", DeploymentStatus(&appsv1.Deployment{Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}}), Ready, ""},
		{"stuck deployment", DeploymentStatus(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}}), Failed, "progress deadline"},
		{"missing", Missing(Dependency{Secret, "creds"}), Pending, "waiting for Secret creds, which does not exist yet"},
	} {
		if c.got.State != c.want || !strings.Contains(c.got.Message, c.msg) {
			t.Errorf("%s: %+v, want state %d with %q", c.name, c.got, c.want, c.msg)
		}
	}
}

func TestOwnerOf(t *testing.T) {
	pod := func(kind, apiVersion, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptr.To(true)}}}}
	}
	for _, c := range []struct {
		pod  *corev1.Pod
		want Dependency
		ok   bool
	}{
		{pod("Job", "batch/v1", "train", nil), Dependency{Job, "train"}, true},
		{pod("ReplicaSet", "apps/v1", "db-5d9f7c", map[string]string{"pod-template-hash": "5d9f7c"}), Dependency{Deployment, "db"}, true},
		{pod("ReplicaSet", "apps/v1", "db-5d9f7c", nil), Dependency{}, false},
		{pod("StatefulSet", "apps/v1", "db", nil), Dependency{}, false},
		{pod("Job", "example.com/v1", "train", nil), Dependency{}, false},
		{&corev1.Pod{}, Dependency{}, false},
	} {
		got, ok := OwnerOf(c.pod)
		if got != c.want || ok != c.ok {
			t.Errorf("OwnerOf(%v) = %v, %v; want %v, %v", c.pod.OwnerReferences, got, ok, c.want, c.ok)
		}
	}
}

func TestCycle(t *testing.T) {
	a, b, c := Dependency{Job, "a"}, Dependency{Job, "b"}, Dependency{Deployment, "c"}
	g := NewGraph()
	g.Add("ns", a, []Dependency{b, {Secret, "s"}})
	g.Add("ns", b, []Dependency{c})
	if _, ok := g.Cycle("ns", a); ok {
		t.Fatal("a cycle without one")
	}
	g.Add("other", c, []Dependency{a}) // another namespace's c
	if _, ok := g.Cycle("ns", a); ok {
		t.Fatal("a cycle through another namespace")
	}
	g.Add("ns", c, []Dependency{a})
	g.Add("ns", c, []Dependency{a}) // a second pod of c
	path, ok := g.Cycle("ns", a)
	if !ok || !slices.Equal(path, []Dependency{b, c}) {
		t.Fatalf("Cycle(a) = %v, %v; want [b c]", path, ok)
	}
	if msg := CycleMessage(a, path); msg != "Job a waits for Job b, which waits for Deployment c, which waits for Job a: a dependency cycle, none of them can start" {
		t.Errorf("CycleMessage = %q", msg)
	}
	g.Remove("ns", c, []Dependency{a})
	if _, ok := g.Cycle("ns", b); !ok {
		t.Fatal("the cycle went with one of two pods of c")
	}
	g.Remove("ns", c, []Dependency{a})
	if _, ok := g.Cycle("ns", b); ok {
		t.Fatal("the cycle stayed after the last pod of c")
	}
	g.Add("ns", a, []Dependency{a})
	if path, ok := g.Cycle("ns", a); !ok || len(path) != 0 {
		t.Fatalf("Cycle of a self-wait = %v, %v", path, ok)
	}
	if msg := CycleMessage(a, nil); !strings.Contains(msg, "Job a waits for itself") {
		t.Errorf("CycleMessage of a self-wait = %q", msg)
	}
}
