package visibility

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// SimulationLimits bound the work that one request for a what-if may ask of the
// manager, whoever asks (a tenant with edit may): its size, its time, and how many run
// at once. A request beyond a size is refused before anything is simulated, with the
// limit and the manager's flag that sets it in the message (docs/visibility.md).
type SimulationLimits struct {
	// MaxBodyBytes bounds a PodSimulation's body (413 beyond; --simulation-max-body-bytes).
	MaxBodyBytes int64
	// MaxPods bounds spec.count (422 beyond; --simulation-max-pods).
	MaxPods int
	// MaxContainers bounds the containers of all the simulated pods together: the
	// template's init, sidecar, app and ephemeral containers times spec.count (422
	// beyond; --simulation-max-containers).
	MaxContainers int
	// Timeout bounds a simulation's time (--simulation-timeout): past it, the answer
	// says where the pods would wait and that no start is estimated, or is 504 when
	// even that was not known in time.
	Timeout time.Duration
	// Concurrency is how many simulations run at once, at most one per namespace
	// (--simulation-concurrency). A request beyond either answers 429 with Retry-After
	// at once: no tenant's what-if waits in a queue behind another's.
	Concurrency int
}

// Defaults of SimulationLimits.
const (
	// DefaultSimulationMaxBodyBytes: a pod template is a few KB; half a MB holds the
	// largest real ones.
	DefaultSimulationMaxBodyBytes = 512 << 10
	// DefaultSimulationMaxPods is the API's MaxSimulatedPods: a Job of parallelism
	// 1000, a Deployment of 1000 replicas.
	DefaultSimulationMaxPods = visv1.MaxSimulatedPods
	// DefaultSimulationMaxContainers: 1000 pods of 10 containers (init containers and
	// sidecars counted).
	DefaultSimulationMaxContainers = 10000
	// DefaultSimulationTimeout: a simulation of 10,000 gated pods takes about a second
	// of CPU, two at half a CPU; far below a client's timeout (kubectl's requests
	// through kube-apiserver end at 60 s).
	DefaultSimulationTimeout = 20 * time.Second
	// DefaultSimulationConcurrency: two tenants' what-ifs run at once, each in its own
	// namespace.
	DefaultSimulationConcurrency = 2
)

// DefaultSimulationLimits are the limits the manager's flags default to.
func DefaultSimulationLimits() SimulationLimits {
	return SimulationLimits{
		MaxBodyBytes:  DefaultSimulationMaxBodyBytes,
		MaxPods:       DefaultSimulationMaxPods,
		MaxContainers: DefaultSimulationMaxContainers,
		Timeout:       DefaultSimulationTimeout,
		Concurrency:   DefaultSimulationConcurrency,
	}
}

// Validate says which limit is not positive, by its flag.
func (l SimulationLimits) Validate() error {
	var errs []error
	for _, v := range []struct {
		flag string
		ok   bool
		val  any
	}{
		{"--simulation-max-body-bytes", l.MaxBodyBytes > 0, l.MaxBodyBytes},
		{"--simulation-max-pods", l.MaxPods > 0, l.MaxPods},
		{"--simulation-max-containers", l.MaxContainers > 0, l.MaxContainers},
		{"--simulation-timeout", l.Timeout > 0, l.Timeout},
		{"--simulation-concurrency", l.Concurrency > 0, l.Concurrency},
	} {
		if !v.ok {
			errs = append(errs, fmt.Errorf("%s (%v) must be more than 0", v.flag, v.val))
		}
	}
	return errors.Join(errs...)
}

// checkSize refuses a simulation of count pods of tmpl beyond MaxPods or MaxContainers:
// 422, the limit named.
func (l SimulationLimits) checkSize(tmpl *corev1.PodTemplateSpec, count int) error {
	if count > l.MaxPods {
		return tooLarge(field.NewPath("spec", "count"), count,
			fmt.Sprintf("a simulation of %d pods exceeds the limit of %d pods (--simulation-max-pods)", count, l.MaxPods))
	}
	spec := &tmpl.Spec
	perPod := len(spec.InitContainers) + len(spec.Containers) + len(spec.EphemeralContainers)
	if total := int64(perPod) * int64(count); total > int64(l.MaxContainers) {
		return tooLarge(field.NewPath("spec", "template", "spec", "containers"), perPod,
			fmt.Sprintf("a simulation of %d pods of %d containers each (%d containers) exceeds the limit of %d containers (--simulation-max-containers)", count, perPod, total, l.MaxContainers))
	}
	return nil
}

// tooLarge is the 422 Invalid status of a PodSimulation whose field at path asks for
// more than a limit, with msg as its message.
func tooLarge(path *field.Path, value any, msg string) error {
	err := apierrors.NewInvalid(visv1.GroupVersion.WithKind(visv1.KindPodSimulation).GroupKind(), "", field.ErrorList{field.Invalid(path, value, msg)})
	err.ErrStatus.Message = msg
	return err
}

// bodyTooLarge is the 413 of a body of size bytes (0: not known, more than the limit).
func bodyTooLarge(size, limit int64) error {
	what := fmt.Sprintf("more than %d bytes", limit)
	if size > 0 {
		what = fmt.Sprintf("%d bytes", size)
	}
	err := apierrors.NewRequestEntityTooLargeError("")
	err.ErrStatus.Message = fmt.Sprintf("a PodSimulation body of %s exceeds the limit of %d bytes (--simulation-max-body-bytes)", what, limit)
	return err
}

// simulationBusyRetry is the Retry-After of a what-if refused because the simulations
// that run leave no room for it: kube-apiserver's own 429s say 1 second, and client-go
// (the plugin) retries after it by itself.
const simulationBusyRetry = time.Second

// writeTooManyRequests answers 429 with msg and a Retry-After header, as
// kube-apiserver's own flow control does.
func writeTooManyRequests(w http.ResponseWriter, msg string) {
	seconds := int(simulationBusyRetry / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	writeError(w, apierrors.NewTooManyRequests(msg, seconds))
}
