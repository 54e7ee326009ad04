package app

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// simulationSource creates a PodSimulation in a namespace and returns the answer.
type simulationSource func(ctx context.Context, namespace string, sim *visv1.PodSimulation) (*visv1.PodSimulation, error)

// simulationsFromFlags returns env.simulations for the plugin: the visibility API with
// the kubeconfig's credentials.
func simulationsFromFlags(flags *genericclioptions.ConfigFlags) func() (simulationSource, error) {
	return func() (simulationSource, error) {
		cs, err := clientsetFromFlags(flags)
		if err != nil {
			return nil, err
		}
		return visibility.NewClient(cs.CoreV1().RESTClient()).Simulate, nil
	}
}

func newSimulateCommand(e *env) *cobra.Command {
	out := newOutputFlags(false, formatWide)
	var file string
	cmd := &cobra.Command{
		Use:   "simulate -f FILE",
		Short: "Say what pods would do if created now, without creating them",
		Long: `Say, without creating anything, what would happen to the pods of FILE if they were
created now: the budgets that would cover them, the position each would take in each
budget's queue, why it would wait (or that it would be admitted at once, and on which
flavor), and when the manager estimates it would start, with the range.

FILE holds one Pod, Job, Deployment, ReplicaSet or StatefulSet ("-" reads stdin). A
workload's pods are its pod template times its replicas; a Job's, its parallelism,
bounded by its completions. The pods are simulated in the object's namespace, else
-n's (both given and different: an error, as kubectl create says), and the manager
learns their durations from the workload's finished pods.

The visibility API answers it (POST podsimulations, docs/visibility.md) to users who
may create pods in the namespace; the answer names no other pod. The manager bounds
each what-if: by default at most 1000 pods and 10000 containers in all, one running
per namespace at a time (a second one is retried for a few seconds, then refused).

-o wide adds each pod's PRIORITY and REQUESTS; -o json|yaml print the answer, a
PodSimulation (visibility.quotagate.io/v1alpha1).`,
		Example: `  kubectl quotagate simulate -f job.yaml
  kubectl quotagate simulate -f job.yaml -o wide
  kubectl quotagate simulate -f deployment.yaml -n team-a -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := out.printer()
			if err != nil {
				return err
			}
			if file == "" {
				return errors.New("-f FILE is required: the Pod, Job, Deployment, ReplicaSet or StatefulSet to simulate")
			}
			data, err := readFile(file, e.streams.In)
			if err != nil {
				return err
			}
			w, err := workloadOf(data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			ns := w.namespace
			if ns == "" || cmd.Flags().Changed("namespace") {
				given, err := e.namespace()
				if err != nil {
					return err
				}
				if ns != "" && ns != given {
					// As kubectl create -f refuses it: which one was meant is not ours to guess.
					return fmt.Errorf("the namespace from the provided object %q does not match the namespace %q: pass --namespace=%s, or remove the object's namespace", ns, given, ns)
				}
				ns = given
			}
			if e.simulations == nil {
				return errors.New("simulate needs the visibility API, which this plugin was not given")
			}
			simulate, err := e.simulations()
			if err != nil {
				return err
			}
			sim := &visv1.PodSimulation{
				TypeMeta: metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: visv1.KindPodSimulation},
				Spec:     visv1.PodSimulationSpec{Template: w.template, Count: w.count},
			}
			res, err := simulate(cmd.Context(), ns, sim)
			if err != nil {
				return simulationError(ns, err)
			}
			if p != nil {
				return p.PrintObj(res, e.streams.Out)
			}
			return renderSimulation(e.streams.Out, out, w, res, e.now())
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", `The Pod, Job, Deployment, ReplicaSet or StatefulSet to simulate ("-": stdin).`)
	out.addFlags(cmd, true)
	return cmd
}

// simulationError says what a refusal of the visibility API means.
func simulationError(ns string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("you may not simulate pods in namespace %s: it needs create on podsimulations in %s (the edit and admin roles have it when the chart aggregates it) and create on pods there: %w", ns, visv1.GroupName, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the visibility API does not serve podsimulations (kubectl get apiservice v1alpha1.%s; the chart's visibility.enabled; a manager older than the plugin): %w", visv1.GroupName, err)
	case apierrors.IsServiceUnavailable(err):
		return fmt.Errorf("the visibility API is unavailable (kubectl get apiservice v1alpha1.%s shows why): %w", visv1.GroupName, err)
	case apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err):
		return fmt.Errorf("the manager simulates no what-if this large (the limits are its --simulation-* flags, the chart's visibility.simulations): %w", err)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("the manager had no free slot to simulate pods in namespace %s, also after retrying (one simulation runs per namespace at a time): %w", ns, err)
	}
	return fmt.Errorf("simulating pods in namespace %s: %w", ns, err)
}

func readFile(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		if stdin == nil {
			return nil, errors.New("-f -: no standard input")
		}
		return io.ReadAll(stdin)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return data, nil
}

// workload is what a file asks to simulate: its kind and name, the pod template and
// how many pods.
type workload struct {
	kind, name, namespace string
	template              corev1.PodTemplateSpec
	count                 int32
}

// describe names the workload as the text output does: "Job team-a/train".
func (w *workload) describe(ns string) string {
	return fmt.Sprintf("%s %s/%s", w.kind, ns, w.name)
}

// workloadScheme decodes the kinds simulate reads.
var workloadScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("registering the workload kinds: %v", err))
		}
	}
	return s
}()

// workloadOf decodes one object (YAML or JSON) and returns its pods: a Pod is itself;
// a Deployment's, ReplicaSet's or StatefulSet's template times its replicas (1 when
// unset); a Job's template times its parallelism (1 when unset) bounded by its
// completions. The template carries the owner whose finished pods' durations the
// manager learns from, as the pods the controller creates would.
func workloadOf(data []byte) (*workload, error) {
	docs, err := documents(data)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("holds %d objects; simulate reads one", len(docs))
	}
	obj, gvk, err := serializer.NewCodecFactory(workloadScheme).UniversalDeserializer().Decode(docs[0], nil, nil)
	if err != nil {
		if runtime.IsNotRegisteredError(err) {
			return nil, fmt.Errorf("simulate reads a Pod, Job, Deployment, ReplicaSet or StatefulSet: %w", err)
		}
		return nil, fmt.Errorf("decoding: %w", err)
	}
	replicas := func(r *int32) int32 {
		if r == nil {
			return 1
		}
		return *r
	}
	w := &workload{kind: gvk.Kind}
	var meta *metav1.ObjectMeta
	switch o := obj.(type) {
	case *corev1.Pod:
		meta, w.count = &o.ObjectMeta, 1
		w.template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
			Name: o.Name, GenerateName: o.GenerateName, Labels: o.Labels, Annotations: o.Annotations, OwnerReferences: o.OwnerReferences,
		}, Spec: o.Spec}
	case *batchv1.Job:
		meta, w.template, w.count = &o.ObjectMeta, o.Spec.Template, replicas(o.Spec.Parallelism)
		if o.Spec.Completions != nil {
			w.count = min(w.count, *o.Spec.Completions)
		}
	case *appsv1.Deployment:
		meta, w.template, w.count = &o.ObjectMeta, o.Spec.Template, replicas(o.Spec.Replicas)
	case *appsv1.ReplicaSet:
		meta, w.template, w.count = &o.ObjectMeta, o.Spec.Template, replicas(o.Spec.Replicas)
	case *appsv1.StatefulSet:
		meta, w.template, w.count = &o.ObjectMeta, o.Spec.Template, replicas(o.Spec.Replicas)
	default:
		return nil, fmt.Errorf("simulate reads a Pod, Job, Deployment, ReplicaSet or StatefulSet, not a %s", gvk.Kind)
	}
	w.name, w.namespace = cmp.Or(meta.Name, strings.TrimSuffix(meta.GenerateName, "-")), meta.Namespace
	if w.count <= 0 {
		return nil, fmt.Errorf("%s %s asks for %d pods: nothing to simulate", w.kind, w.name, w.count)
	}
	if w.kind != "Pod" {
		// The pods a controller creates: named after it, owned by it (a Deployment's
		// by its ReplicaSet, whose name starts with the Deployment's).
		owner := w.kind
		if owner == "Deployment" {
			owner = "ReplicaSet"
		}
		w.template.GenerateName = meta.Name + "-"
		w.template.OwnerReferences = []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: owner, Name: meta.Name, Controller: ptr.To(true)}}
	}
	return w, nil
}

// documents splits YAML (or JSON) into its non-empty documents.
func documents(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML: %w", err)
		}
		if len(bytes.TrimSpace(doc)) > 0 && strings.TrimSpace(strings.Trim(string(doc), "-\n")) != "" {
			docs = append(docs, doc)
		}
	}
}
