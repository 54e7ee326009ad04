package deploy

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/test/localcluster"
)

// `make deploy` and `make undeploy` against a real kube-apiserver, with an image index
// in an OCI layout (random bytes: nothing runs it) and a registry in the test: the first
// run pushes and installs, the second pushes another tag and upgrades with its values,
// each Deployment runs the pushed digest, and --uninstall removes the release. A
// kubeconfig that reaches no cluster fails before anything is pushed, and choosing
// cert-manager on a cluster without it fails the install with a sentence that says so.
func TestRunInstallsUpgradesAndUninstalls(t *testing.T) {
	ctx := t.Context()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	idx, err := random.Index(512, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	digest, _ := idx.Digest()
	opts := Options{
		Image: host + "/team/quotagate", DefaultTag: "v0.3.0", Layout: dir,
		Chart: filepath.Join("..", "..", "charts", "quotagate"), Release: "qg", Namespace: "qg-system",
		Kubeconfig: filepath.Join(t.TempDir(), "none.kubeconfig"),
		Timeout:    time.Minute,
	}

	var out bytes.Buffer
	err = Run(ctx, opts, &out)
	if err == nil || !strings.Contains(err.Error(), "the cluster of the kubeconfig") {
		t.Fatalf("Run with a kubeconfig that reaches nothing: %v, want the cluster named as the problem", err)
	}
	if _, err := remote.Head(mustTag(t, host+"/team/quotagate:v0.3.0")); err == nil {
		t.Error("The image was pushed although the cluster cannot be reached")
	}

	// The cluster has no cert-manager: choosing it fails the install, saying so, before
	// any object is created; the default install needs none.
	cluster := localcluster.StartForTest(t, localcluster.Options{})
	cs := kubernetes.NewForConfigOrDie(cluster.Config())
	opts.Kubeconfig = cluster.KubeconfigPath()
	withCertManager := opts
	withCertManager.Set = []string{"certManager.enabled=true"}
	err = Run(ctx, withCertManager, &out)
	if want := "certManager.enabled=true, but this cluster does not serve cert-manager.io/v1: install cert-manager first"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run with certManager.enabled=true on a cluster without cert-manager: %v, want %q", err, want)
	}
	if _, err := cs.AppsV1().Deployments("qg-system").Get(ctx, "qg-quotagate-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the manager Deployment after the refused install: %v, want none", err)
	}
	if err := Run(ctx, opts, &out); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	want := host + "/team/quotagate@" + digest.String()
	checkImages := func(replicas int32) {
		t.Helper()
		dep, err := cs.AppsV1().Deployments("qg-system").Get(ctx, "qg-quotagate-manager", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the manager Deployment: %v", err)
		}
		if got := dep.Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("the manager runs %q, want the pushed %q", got, want)
		}
		if got := ptr.Deref(dep.Spec.Replicas, 0); got != replicas {
			t.Errorf("manager replicas %d, want %d", got, replicas)
		}
	}
	checkImages(1)

	opts.Image = host + "/team/quotagate:pr-7"
	opts.Set = append(opts.Set, "manager.replicas=2")
	if err := Run(ctx, opts, &out); err != nil {
		t.Fatalf("Run again: %v\n%s", err, out.String())
	}
	checkImages(2)
	for _, tag := range []string{"v0.3.0", "pr-7"} {
		desc, err := remote.Head(mustTag(t, host+"/team/quotagate:"+tag))
		if err != nil || desc.Digest != digest {
			t.Errorf("the registry's tag %s: %v, %v; want %s", tag, desc, err, digest)
		}
	}
	for _, line := range []string{"Release qg revision 1: deployed", "Release qg revision 2: deployed"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("Run's output lacks %q:\n%s", line, out.String())
		}
	}

	opts.Uninstall = true
	if err := Run(ctx, opts, &out); err != nil {
		t.Fatalf("Run --uninstall: %v\n%s", err, out.String())
	}
	if _, err := cs.AppsV1().Deployments("qg-system").Get(ctx, "qg-quotagate-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the manager Deployment after --uninstall: %v, want it gone", err)
	}
}

func mustTag(t *testing.T, ref string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}
