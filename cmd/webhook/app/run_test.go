package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quotagate/quotagate/internal/testbed"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"

	"github.com/quotagate/quotagate/pkg/admission"
)

// serveInBackground starts the webhook as the binary does (Serve), or with extra
// handlers on its server when the test gives some, and returns the cancel that stops
// it and the channel its return arrives on. The test's end cancels it too.
func serveInBackground(t *testing.T, o *Options, extra map[string]http.Handler) (stop context.CancelFunc, served <-chan error) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	ch := make(chan error, 1)
	go func() {
		if extra == nil {
			ch <- Serve(ctx, o)
			return
		}
		ch <- serve(ctx, o, extra)
	}()
	return cancel, ch
}

// An empty cert dir (the chart's Secret before the manager issues the certificate):
// the webhook does not serve and is not ready; once the files appear it serves them.
func TestServeWaitsForCertificate(t *testing.T) {
	certDir := t.TempDir()
	o := testOptions(t, certDir)
	cancel, served := serveInBackground(t, o, nil)

	readyz := "http://" + o.HealthProbeBindAddress + "/readyz"
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get(readyz)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return false, fmt.Errorf("/readyz is OK without a certificate")
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("/readyz before the certificate: %v", err)
	}
	if c, err := net.Dial("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port))); err == nil {
		_ = c.Close()
		t.Fatal("the webhook port accepts connections without a certificate")
	}

	caPEM := writeCert(t, certDir, "gen1")
	waitReady(t, o)
	if got := postPod(t, tlsClient(caPEM, 0), o); !strings.Contains(got, "example.com/test-gate") {
		t.Errorf("patch = %s, want the gate", got)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve() after cancel = %v, want nil", err)
	}
}

// The binary's whole path: TLS, the webhook, metrics, probes, certificate
// rotation and shutdown.
func TestServe(t *testing.T) {
	certDir := t.TempDir()
	caPEM := writeCert(t, certDir, "gen1")
	o := testOptions(t, certDir)
	cancel, served := serveInBackground(t, o, nil)

	waitReady(t, o)

	t.Run("gates a pod over TLS", func(t *testing.T) {
		client := tlsClient(caPEM, 0)
		got := postPod(t, client, o)
		want := `[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"example.com/test-gate"}]}]`
		if got != want {
			t.Errorf("patch = %s, want %s", got, want)
		}
	})

	t.Run("refuses TLS 1.1", func(t *testing.T) {
		client := tlsClient(caPEM, tls.VersionTLS11)
		resp, err := client.Get(webhookURL(o))
		if err == nil {
			_ = resp.Body.Close()
			t.Error("a TLS 1.1 client connected, want the handshake refused")
		}
	})

	t.Run("serves metrics", func(t *testing.T) {
		body := get(t, http.DefaultClient, "http://"+o.MetricsBindAddress+"/metrics")
		for _, want := range []string{
			`quotagate_webhook_requests_total{result="gated"}`,
			`controller_runtime_webhook_latency_seconds_count{webhook="/mutate-v1-pod"}`,
			`controller_runtime_webhook_requests_total{code="200",webhook="/mutate-v1-pod"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("serves the rotated certificate", func(t *testing.T) {
		before := servedCert(t, o)
		writeCert(t, certDir, "gen2")
		// The certwatcher sees the swap through fsnotify, or at worst polls
		// every 10s.
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return !servedCert(t, o).Equal(before), nil })
		if err != nil {
			t.Fatalf("the server still presents the old certificate: %v", err)
		}
	})

	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve() after cancel = %v, want nil", err)
	}
}

func testOptions(t *testing.T, certDir string) *Options {
	t.Helper()
	o := NewOptions()
	o.Host = "127.0.0.1"
	o.Port = testbed.FreePort(t)
	o.CertDir = certDir
	o.MetricsBindAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(testbed.FreePort(t)))
	o.HealthProbeBindAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(testbed.FreePort(t)))
	o.Gate = "example.com/test-gate"
	o.ShutdownDrain = 200 * time.Millisecond
	return o
}

// writeCert writes a new self-signed serving certificate for 127.0.0.1 into
// dir the way the kubelet updates a Secret volume (files behind a ..data
// symlink that is swapped atomically), and returns the CA bundle.
func writeCert(t *testing.T, dir, generation string) []byte {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatalf("generating certificate: %v", err)
	}
	gen := filepath.Join(dir, "..gen-"+generation)
	if err := os.Mkdir(gen, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(gen, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	data := filepath.Join(dir, "..data")
	old, _ := os.Readlink(data)
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(gen), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, data); err != nil {
		t.Fatal(err)
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			t.Fatal(err)
		}
	}
	return certPEM
}

func tlsClient(caPEM []byte, maxVersion uint16) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: maxVersion}},
	}
}

func webhookURL(o *Options) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", o.Port, admission.Path)
}

func waitReady(t *testing.T, o *Options) {
	t.Helper()
	url := "http://" + o.HealthProbeBindAddress + "/readyz"
	testbed.PollEvery(t, 50*time.Millisecond, 30*time.Second, url+" to pass", func(context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, testbed.NotYet(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true, nil
		}
		return false, testbed.NotYet(errors.New(resp.Status))
	})
	if body := get(t, http.DefaultClient, "http://"+o.HealthProbeBindAddress+"/healthz"); body != "ok" {
		t.Errorf("/healthz = %q, want ok", body)
	}
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

// postPod sends a pod CREATE review to the webhook and returns the patch.
func postPod(t *testing.T, c *http.Client, o *Options) string {
	t.Helper()
	patch, _, _ := postPodTraced(t, c, o)
	return patch
}

// postPodTraced is postPod that also reports whether the review went on a connection
// c kept alive and whether the answer asked to close it.
func postPodTraced(t *testing.T, c *http.Client, o *Options) (patch string, reused, closing bool) {
	t.Helper()
	var got httptrace.GotConnInfo
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { got = i }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, webhookURL(o), bytes.NewReader(podReview(t)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("posting review: %v", err)
	}
	defer resp.Body.Close()
	return checkGated(t, resp.Body), got.Reused, resp.Close
}

// checkGated decodes the webhook's answer, checks that it allows the pod, and returns
// the patch.
func checkGated(t *testing.T, body io.Reader) string {
	t.Helper()
	var ar admissionv1.AdmissionReview
	if err := json.NewDecoder(body).Decode(&ar); err != nil {
		t.Fatalf("decoding answer: %v", err)
	}
	if ar.Response == nil || !ar.Response.Allowed {
		t.Fatalf("answer %+v, want allowed", ar.Response)
	}
	if !strings.Contains(string(ar.Response.Patch), "example.com/test-gate") {
		t.Fatalf("patch %s does not add the gate", ar.Response.Patch)
	}
	return string(ar.Response.Patch)
}

// podReview is a pod CREATE AdmissionReview, as the API server sends it.
func podReview(t *testing.T) []byte {
	t.Helper()
	review, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "1",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}`)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return review
}

// servedCert returns the leaf certificate the webhook server presents.
func servedCert(t *testing.T, o *Options) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)),
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reading the presented certificate
	if err != nil {
		t.Fatalf("dialing webhook: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}
