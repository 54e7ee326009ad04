package visibility

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The leader publishes its address: a new Lease, or the one a former leader left,
// taken over; a write the API server refuses is retried, not fatal to the manager.
func TestPublisher(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "quotagate-system", Name: "quotagate-manager-visibility"}
	former := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("https://10.0.0.1:8443")},
	}
	for name, tc := range map[string]struct {
		existing []client.Object
		failures int32 // writes refused before one succeeds
	}{
		"first leader creates the Lease":         {},
		"a new leader takes the former's Lease":  {existing: []client.Object{former.DeepCopy()}},
		"refused writes are retried until taken": {existing: []client.Object{former.DeepCopy()}, failures: 3},
	} {
		t.Run(name, func(t *testing.T) {
			var refused atomic.Int32
			refuse := func() error {
				if refused.Load() < tc.failures {
					refused.Add(1)
					return errors.New("etcdserver: request timed out")
				}
				return nil
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.existing...).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if err := refuse(); err != nil {
						return err
					}
					return c.Create(ctx, obj, opts...)
				},
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if err := refuse(); err != nil {
						return err
					}
					return c.Update(ctx, obj, opts...)
				},
			}).Build()
			p := &Publisher{Reader: c, Writer: c, Namespace: key.Namespace, Name: key.Name, URL: "https://10.0.0.2:8443",
				Backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 100}}
			if err := p.Start(t.Context()); err != nil {
				t.Fatalf("Start: %v", err)
			}
			var got coordinationv1.Lease
			if err := c.Get(t.Context(), key, &got); err != nil {
				t.Fatal(err)
			}
			if holder := ptr.Deref(got.Spec.HolderIdentity, ""); holder != p.URL {
				t.Errorf("the Lease names %q, want %s", holder, p.URL)
			}
			if refused.Load() != tc.failures {
				t.Errorf("%d writes refused, want %d", refused.Load(), tc.failures)
			}
		})
	}
}

// A publisher whose leadership ends (its context cancelled) while the API server
// refuses every write stops quietly: the manager is shutting down or handing over.
func TestPublisherStopsWithItsContext(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			cancel()
			return errors.New("connection refused")
		},
	}).Build()
	p := &Publisher{Reader: c, Writer: c, Namespace: "ns", Name: "l", URL: "https://10.0.0.2:8443"}
	if err := p.Start(ctx); err != nil {
		t.Errorf("Start after its context ended: %v, want nil", err)
	}
}
