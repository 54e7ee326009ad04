//go:build e2e

package e2e

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
	qgversion "github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/localinstall"
	"github.com/quotagate/quotagate/tools/deploy"
	"github.com/quotagate/quotagate/tools/ociimage"
)

// TestDeployFromCheckout is docs/install.md's "Install from a checkout" (`make deploy IMG=...`) on
// the local control plane: the image `make image` builds (this machine's platform only,
// to save a cross-compile), pushed by tools/deploy to a registry (in process), the
// chart installed with the values deploy computes from IMG through deploy.Apply (what
// `make deploy` runs; localinstall's post-renderer added). Each Deployment runs the
// pushed image by digest, the registry holds it under IMG's tag, and the webhook and
// manager processes run the binaries pulled back out of the registry by that reference:
// they report the checkout's version, gate a pod and admit it.
func TestDeployFromCheckout(t *testing.T) {
	began := time.Now()
	ctx := logr.NewContext(t.Context(), testr.NewWithOptions(t, testr.Options{Verbosity: 1}))
	wd, err := os.Getwd()
	fatalIf(t, err, "finding the repository")
	root, err := localcluster.RepoRoot(wd)
	fatalIf(t, err, "finding the repository")
	chrt, err := loader.Load(filepath.Join(root, "charts", "quotagate"))
	fatalIf(t, err, "loading the chart")
	ver := chrt.Metadata.AppVersion
	rev, err := git(root, "rev-parse", "HEAD")
	fatalIf(t, err, "reading the checkout's commit")
	work := t.TempDir()

	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	built, err := ociimage.Build(ctx, ociimage.Options{
		Metadata: ociimage.Metadata{Version: ver, Revision: rev, Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		Root:     root, LDFlags: qgversion.LDFlags(ver, rev),
		BinDir: filepath.Join(work, "image-bin"), LayoutDir: filepath.Join(work, "oci"),
		Platforms: []v1.Platform{platform},
	})
	fatalIf(t, err, "building the image")
	t.Logf("Built image %s (%s) in %v", ver, built.Digest, time.Since(began).Round(time.Millisecond))

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	img, err := deploy.ParseImage(strings.TrimPrefix(reg.URL, "http://")+"/team/quotagate", ver)
	fatalIf(t, err, "parsing IMG")
	idx, err := deploy.LayoutIndex(filepath.Join(work, "oci"))
	fatalIf(t, err, "reading the image's layout")
	pub, err := deploy.Push(idx, img, remote.WithContext(ctx))
	fatalIf(t, err, "pushing the image")
	if pub.Digest != built.Digest {
		t.Fatalf("Pushed %s, but make image built %s", pub.Digest, built.Digest)
	}

	// The registry holds it, under IMG's tag.
	desc, err := remote.Head(mustTag(t, img.String()), remote.WithContext(ctx))
	fatalIf(t, err, "asking the registry for "+img.String())
	if desc.Digest != pub.Digest {
		t.Errorf("The registry's %s is %s, want the pushed %s", img, desc.Digest, pub.Digest)
	}

	// What a node would run: the binaries of the image the chart names, from the registry.
	binDir := pullBinaries(t, pub.Reference(), platform, filepath.Join(work, "pulled"))
	cluster := localcluster.StartForTest(t, localcluster.Options{})
	values := deploy.WithImage(map[string]any{"admission": map[string]any{"mode": localinstall.AdmissionWebhook}}, pub)
	inst, err := localinstall.Install(ctx, cluster, localinstall.Options{Values: values, BinDir: binDir, RepoRoot: root})
	fatalIf(t, err, "installing the chart with the deployed image")
	cleanUpInstall(t, inst)
	e := envFor(t, cluster, inst)
	t.Logf("Installed at %v", time.Since(began).Round(time.Millisecond))

	var deps appsv1.DeploymentList
	fatalIf(t, e.c.List(ctx, &deps), "listing Deployments")
	seen := map[string]string{}
	for _, d := range deps.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			seen[d.Name] = c.Image
			if c.Image != pub.Reference() {
				t.Errorf("Deployment %s container %s runs %q, want the pushed %q", d.Name, c.Name, c.Image, pub.Reference())
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("Deployments %v, want the webhook's and the manager's", seen)
	}

	checkVersion(t, e, inst, ver)

	// The pulled webhook gates, the pulled manager admits.
	const ns = "deployed"
	fatalIf(t, e.c.Create(ctx, enabledNamespace(ns)), "creating namespace")
	fatalIf(t, e.c.Create(ctx, budget(ns, "team", v1alpha1.StateOpen, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})), "creating Budget")
	for n := range 2 {
		fatalIf(t, e.c.Create(ctx, longPod(ns, fmt.Sprintf("pod-%d", n))), "creating a pod")
	}
	waitFor(t, "one pod admitted and one gated", time.Minute, func() (bool, string) {
		a, g := admittedAndGated(t, e, ns)
		return len(a) == 1 && len(g) == 1, fmt.Sprintf("%d admitted and running, %d gated", len(a), len(g))
	})
	t.Logf("Done in %v", time.Since(began).Round(time.Millisecond))
}

func mustTag(t *testing.T, ref string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(ref)
	fatalIf(t, err, "parsing "+ref)
	return tag
}

// pullBinaries pulls ref's image for platform from its registry and writes its /manager
// and /webhook into dir, as a node's container runtime would unpack them.
func pullBinaries(t *testing.T, ref string, platform v1.Platform, dir string) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	fatalIf(t, err, "parsing "+ref)
	img, err := remote.Image(r, remote.WithPlatform(platform), remote.WithContext(t.Context()))
	fatalIf(t, err, "pulling "+ref)
	fatalIf(t, os.MkdirAll(dir, 0o755), "creating "+dir)
	fs := mutate.Extract(img)
	defer fs.Close() //nolint:errcheck // read only
	want := map[string]bool{}
	for _, b := range ociimage.Binaries {
		want[path.Clean("/"+b.Path)] = true
	}
	tr := tar.NewReader(fs)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		fatalIf(t, err, "reading the image's files")
		p := path.Clean("/" + hdr.Name)
		if !want[p] {
			continue
		}
		delete(want, p)
		f, err := os.OpenFile(filepath.Join(dir, path.Base(p)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		fatalIf(t, err, "writing "+p)
		_, err = io.Copy(f, tr) //nolint:gosec // our own image's binaries
		fatalIf(t, errors.Join(err, f.Close()), "writing "+p)
	}
	if len(want) > 0 {
		t.Fatalf("The image %s lacks %v", ref, want)
	}
	return dir
}
