package deploy

import (
	"archive/tar"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestParseImage(t *testing.T) {
	for name, tc := range map[string]struct {
		img, defaultTag string
		want            Image
		wantErr         string
	}{
		"registry, path and tag":        {img: "registry.example/team/quotagate:dev", want: Image{Repository: "registry.example/team/quotagate", Tag: "dev"}},
		"a port is not a tag":           {img: "localhost:5000/quotagate", defaultTag: "v0.3.0", want: Image{Repository: "localhost:5000/quotagate", Tag: "v0.3.0"}},
		"the tag given wins":            {img: "localhost:5000/quotagate:pr-7", defaultTag: "v0.3.0", want: Image{Repository: "localhost:5000/quotagate", Tag: "pr-7"}},
		"Docker Hub, written short":     {img: "quotagate:dev", want: Image{Repository: "quotagate", Tag: "dev"}},
		"nothing":                       {img: " ", wantErr: "set IMG=registry/repository:tag"},
		"a digest":                      {img: "registry.example/quotagate@sha256:" + strings.Repeat("a", 64), wantErr: "names a digest"},
		"no tag and no default":         {img: "registry.example/quotagate", wantErr: "has no tag"},
		"upper case is not a reference": {img: "registry.example/QuotaGate:dev", wantErr: `image "registry.example/QuotaGate:dev"`},
		"a bad tag":                     {img: "registry.example/quotagate:dev!", wantErr: `image "registry.example/quotagate:dev!"`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseImage(tc.img, tc.defaultTag)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseImage(%q) = %+v, %v; want an error with %q", tc.img, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseImage(%q): %v", tc.img, err)
			}
			if got.Repository != tc.want.Repository || got.Tag != tc.want.Tag {
				t.Errorf("ParseImage(%q) = %s, want %s", tc.img, got, tc.want)
			}
		})
	}
}

// The chart runs a pushed image by digest, a loaded one by tag; the user's other image
// values stay.
func TestWithImage(t *testing.T) {
	img, err := ParseImage("registry.example/quotagate:dev", "")
	if err != nil {
		t.Fatal(err)
	}
	digest := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("b", 64)}
	user := map[string]any{"image": map[string]any{"pullPolicy": "Always", "tag": "old"}, "manager": map[string]any{"replicas": 2}}
	for name, tc := range map[string]struct {
		pub  Published
		want map[string]any
		ref  string
	}{
		"pushed": {
			pub: Published{Image: img, Digest: digest, Pushed: true},
			want: map[string]any{
				"image":   map[string]any{"pullPolicy": "Always", "repository": "registry.example/quotagate", "tag": "dev", "digest": digest.String()},
				"manager": map[string]any{"replicas": 2},
			},
			ref: "registry.example/quotagate@" + digest.String(),
		},
		"loaded from an archive": {
			pub: Published{Image: img, Digest: digest},
			want: map[string]any{
				"image":   map[string]any{"pullPolicy": "Always", "repository": "registry.example/quotagate", "tag": "dev"},
				"manager": map[string]any{"replicas": 2},
			},
			ref: "registry.example/quotagate:dev",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, WithImage(user, tc.pub)); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			if got := tc.pub.Reference(); got != tc.ref {
				t.Errorf("Reference() = %q, want %q", got, tc.ref)
			}
		})
	}
	if user["image"].(map[string]any)["tag"] != "old" {
		t.Error("WithImage changed the values it was given")
	}
}

// Push honours the standard Docker config: a registry that wants credentials gets those
// of $DOCKER_CONFIG/config.json, and refuses the push without them.
func TestPushWithDockerConfigCredentials(t *testing.T) {
	const user, password = "ci", "s3cret"
	regHandler := registry.New(registry.Logger(nilLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		regHandler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	img, err := ParseImage(host+"/team/quotagate:dev", "")
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	_, err = Push(idx, img)
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Push without credentials: %v, want the registry's 401", err)
	}

	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	pub, err := Push(idx, img)
	if err != nil {
		t.Fatalf("Push with the Docker config's credentials: %v", err)
	}
	want, _ := idx.Digest()
	if pub.Digest != want || !pub.Pushed {
		t.Errorf("Push = %+v, want digest %s, pushed", pub, want)
	}
	got, err := remote.Index(img.ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		t.Fatalf("reading back %s: %v", img, err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("the registry's %s is %s, want %s", img, d, want)
	}
}

// The archive for kind and k3d names its image for containerd (which ignores a bare
// ref.name tag) and holds the same index.
func TestWriteArchiveNamesTheImageForContainerd(t *testing.T) {
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	img, err := ParseImage("quotagate.local/quotagate:dev", "")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "not-yet", "deploy.oci.tar")
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pub, err := WriteArchive(idx, img, file, created)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := idx.Digest(); pub.Digest != want || pub.Pushed {
		t.Errorf("WriteArchive = %+v, want digest %s, not pushed", pub, want)
	}
	dir := untar(t, file, created)
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("index.json has %d entries, want 1", len(m.Manifests))
	}
	want := map[string]string{"org.opencontainers.image.ref.name": "dev", "io.containerd.image.name": "quotagate.local/quotagate:dev"}
	if diff := cmp.Diff(want, m.Manifests[0].Annotations); diff != "" {
		t.Errorf("index.json entry's annotations (-want +got):\n%s", diff)
	}
	if m.Manifests[0].Digest != pub.Digest {
		t.Errorf("index.json names %s, want %s", m.Manifests[0].Digest, pub.Digest)
	}
	if _, err := LayoutIndex(dir); err != nil {
		t.Errorf("the archive's layout: %v", err)
	}
}

// untar unpacks file into a new directory, checking every entry's time.
func untar(t *testing.T, file string, mtime time.Time) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(mtime) {
			t.Errorf("%s dated %v, want %v", hdr.Name, hdr.ModTime, mtime)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLayoutIndexSaysWhatIsMissing(t *testing.T) {
	_, err := LayoutIndex(filepath.Join(t.TempDir(), "oci"))
	if err == nil || !strings.Contains(err.Error(), "run `make image` first") {
		t.Errorf("LayoutIndex of a missing layout: %v, want it to say to run make image", err)
	}
}

// nilLogger keeps the registry's request log out of the test's output.
func nilLogger() *log.Logger { return log.New(io.Discard, "", 0) }
