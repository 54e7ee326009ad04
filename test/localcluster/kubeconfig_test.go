package localcluster

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestKubeconfigRoundTrip(t *testing.T) {
	tests := map[string]*rest.Config{
		"bearer token": {
			Host:            "https://127.0.0.1:6443",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")},
			BearerToken:     "token",
		},
		"client certificate": {
			Host:            "https://127.0.0.1:6443",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")},
		},
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubeconfig")
			if err := (&Cluster{}).WriteKubeconfig(in, path); err != nil {
				t.Fatal(err)
			}
			out, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatal(err)
			}
			type creds struct {
				Host, Token   string
				CA, Cert, Key string
			}
			want := creds{in.Host, in.BearerToken, string(in.CAData), string(in.CertData), string(in.KeyData)}
			got := creds{out.Host, out.BearerToken, string(out.CAData), string(out.CertData), string(out.KeyData)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Config read back (-want +got):\n%s", diff)
			}
		})
	}
}
