package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Versions of the binaries this package drives; they match the Makefile's pins.
const (
	KubeVersion = "v1.37.2"
	KwokVersion = "v0.8.0"
)

// Environment variables that point at the binaries; the Makefile exports both.
const (
	KubeBinEnv = "QUOTAGATE_KUBE_BIN"
	KwokBinEnv = "QUOTAGATE_KWOK_BIN"
)

// Names of the processes, as they appear in errors, log file names and ExtraArgs keys.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
)

const modulePath = "github.com/quotagate/quotagate"

// Options configure a cluster. The zero value is a usable default.
type Options struct {
	// Nodes is how many kwok nodes to create; 0 means 4.
	Nodes int
	// NodeCPU and NodeMemory are each node's capacity and allocatable; empty means 32
	// CPUs and 256Gi.
	NodeCPU, NodeMemory string
	// NodeMaxPods is each node's pod capacity; 0 means 110.
	NodeMaxPods int

	// Dir holds the certificates, kubeconfigs, etcd data and logs. Empty means a new
	// temporary directory, which Stop removes; a given Dir is left in place.
	Dir string

	// KubeBin is the directory with etcd, kube-apiserver, kube-controller-manager and
	// kube-scheduler; empty means $QUOTAGATE_KUBE_BIN, else <repo>/bin/kube-v1.37.2.
	KubeBin string
	// KwokBin is the directory with kwok and its stages/; empty means
	// $QUOTAGATE_KWOK_BIN, else <repo>/bin/kwok-v0.8.0.
	KwokBin string

	// ExtraArgs are flags appended to a process's command line, keyed by process name
	// (Etcd, KubeAPIServer, ...). A later flag overrides an earlier one.
	ExtraArgs map[string][]string

	// WorkloadAPI serves Kubernetes' Workload API (scheduling.k8s.io/v1beta1 Workloads
	// and PodGroups) and lets kube-scheduler place a PodGroup's pods as a gang: the
	// GenericWorkload and DRAWorkloadResourceClaims feature gates (beta and off by
	// default in 1.37) on kube-apiserver, kube-controller-manager and kube-scheduler,
	// and the API group version in kube-apiserver's --runtime-config. Its flags come
	// before ExtraArgs.
	WorkloadAPI bool
	// CompositePodGroups, with WorkloadAPI, serves CompositePodGroups too
	// (scheduling.k8s.io/v1alpha3, the CompositePodGroup feature gate, alpha in 1.37,
	// and TopologyAwareWorkloadScheduling, which it depends on), the gates on every
	// component. kube-scheduler 1.37.2 did not place their pods here (see
	// docs/start-control.md, "CompositePodGroups").
	CompositePodGroups bool

	// StartTimeout bounds how long Start waits for the cluster to be ready; 0 means 3
	// minutes. The context given to Start can cut it shorter.
	StartTimeout time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Nodes == 0 {
		o.Nodes = 4
	}
	if o.NodeCPU == "" {
		o.NodeCPU = "32"
	}
	if o.NodeMemory == "" {
		o.NodeMemory = "256Gi"
	}
	if o.NodeMaxPods == 0 {
		o.NodeMaxPods = 110
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
	if o.WorkloadAPI {
		o.ExtraArgs = withWorkloadAPI(o.ExtraArgs, o.CompositePodGroups)
	} else if o.CompositePodGroups {
		return o, fmt.Errorf("CompositePodGroups needs WorkloadAPI")
	}
	if o.Nodes < 0 || o.NodeMaxPods < 0 {
		return o, fmt.Errorf("nodes (%d) and node max pods (%d) must not be negative", o.Nodes, o.NodeMaxPods)
	}
	var err error
	if o.KubeBin, err = binDir(o.KubeBin, KubeBinEnv, "kube-"+KubeVersion); err != nil {
		return o, err
	}
	if o.KwokBin, err = binDir(o.KwokBin, KwokBinEnv, "kwok-"+KwokVersion); err != nil {
		return o, err
	}
	return o, nil
}

// binDir resolves a binary directory: the explicit value, else the environment
// variable, else <repo>/bin/<name>.
func binDir(explicit, env, name string) (string, error) {
	if explicit != "" {
		return filepath.Abs(explicit)
	}
	if v := os.Getenv(env); v != "" {
		return filepath.Abs(v)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the binaries: %w", err)
	}
	root, err := RepoRoot(wd)
	if err != nil {
		return "", fmt.Errorf("finding the binaries (set %s): %w", env, err)
	}
	return filepath.Join(root, "bin", name), nil
}

// RepoRoot walks up from dir to the directory whose go.mod declares the quotagate
// module, so the harness works from any package's test directory.
func RepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if mod, err := moduleOf(filepath.Join(d, "go.mod")); err == nil && mod == modulePath {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s in %s or above", modulePath, dir)
		}
	}
}

// moduleOf reads the module path declared in a go.mod file.
func moduleOf(goMod string) (string, error) {
	f, err := os.Open(goMod)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no module directive")
}

// binaries are the files Start needs, by process name, plus the kwok stage files.
type binaries struct {
	paths  map[string]string
	stages []string
}

// kwokStages are the stage files kwok is given, relative to its stages/ directory:
// the fast node initialisation, the node heartbeat and the whole general pod set
// (a partial pod set leaves pods Pending).
var kwokStages = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat/node-heartbeat.yaml",
	"pod/general/pod-create.yaml",
	"pod/general/pod-init-container-running.yaml",
	"pod/general/pod-init-container-completed.yaml",
	"pod/general/pod-ready.yaml",
	"pod/general/pod-complete.yaml",
	"pod/general/pod-delete.yaml",
}

// findBinaries checks that every binary and stage file exists, and says how to build
// them when one does not.
func findBinaries(o Options) (binaries, error) {
	b := binaries{paths: map[string]string{
		Etcd:                  filepath.Join(o.KubeBin, Etcd),
		KubeAPIServer:         filepath.Join(o.KubeBin, KubeAPIServer),
		KubeControllerManager: filepath.Join(o.KubeBin, KubeControllerManager),
		KubeScheduler:         filepath.Join(o.KubeBin, KubeScheduler),
		Kwok:                  filepath.Join(o.KwokBin, Kwok),
	}}
	for _, s := range kwokStages {
		b.stages = append(b.stages, filepath.Join(o.KwokBin, "stages", filepath.FromSlash(s)))
	}
	var missing []string
	for _, name := range processOrder {
		if fi, err := os.Stat(b.paths[name]); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, b.paths[name])
		}
	}
	for _, s := range b.stages {
		if _, err := os.Stat(s); err != nil {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("local control plane binaries missing (run `make tools` to build them): %s", strings.Join(missing, ", "))
	}
	return b, nil
}

// processOrder is the order processes start in; they stop in reverse.
var processOrder = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok}

// workloadGates are the feature gates WorkloadAPI turns on.
const workloadGates = "--feature-gates=GenericWorkload=true,DRAWorkloadResourceClaims=true"

// compositeGates are the feature gates CompositePodGroups turns on as well.
const compositeGates = workloadGates + ",TopologyAwareWorkloadScheduling=true,CompositePodGroup=true"

// withWorkloadAPI returns extra with the flags of Options.WorkloadAPI (and of
// Options.CompositePodGroups, with composites) before the flags it had.
func withWorkloadAPI(extra map[string][]string, composites bool) map[string][]string {
	out := map[string][]string{}
	for k, v := range extra {
		out[k] = slices.Clone(v)
	}
	gates, runtime := workloadGates, "--runtime-config=scheduling.k8s.io/v1beta1=true"
	if composites {
		gates, runtime = compositeGates, runtime+",scheduling.k8s.io/v1alpha3=true"
	}
	add := map[string][]string{
		KubeAPIServer:         {gates, runtime},
		KubeControllerManager: {gates},
		KubeScheduler:         {gates},
	}
	for k, flags := range add {
		out[k] = append(flags, out[k]...)
	}
	return out
}
