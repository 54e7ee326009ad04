package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/quotagate/quotagate/test/supervise"
)

// pollInterval is how often Start checks readiness and whether a process has exited.
const pollInterval = 100 * time.Millisecond

// startAttempts bounds the retries when another process took one of the chosen ports.
const startAttempts = 3

// stopGrace is how long a process gets to exit after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// ExitError reports a control plane process that exited while it should have been
// running: its name (such as KubeAPIServer), how it ended and the end of its log.
type ExitError = supervise.ExitError

// Cluster is a running local control plane. Its methods are safe for concurrent use.
type Cluster struct {
	dir     string
	ownsDir bool
	layout  layout
	admin   *rest.Config
	procs   []*supervise.Process // in start order; written only by Start

	stopOnce sync.Once
	stopErr  error
}

// Start starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok,
// creates the kwok nodes, and returns once the API server is ready, every node is Ready
// without a not-ready taint, the default ServiceAccount exists and the scheduler and
// controller manager hold their leader leases. A process that exits meanwhile fails
// Start at once with an *ExitError. On any error every process started is stopped.
// The caller must call Stop.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	log := logr.FromContextOrDiscard(ctx)
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := validateExtraArgs(o.ExtraArgs); err != nil {
		return nil, err
	}
	bins, err := findBinaries(o)
	if err != nil {
		return nil, err
	}
	dir, ownsDir := o.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "quotagate-localcluster-"); err != nil {
			return nil, fmt.Errorf("creating cluster directory: %w", err)
		}
		ownsDir = true
	} else if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("cluster directory: %w", err)
	}

	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		c := &Cluster{dir: dir, ownsDir: ownsDir, layout: layout{dir: dir}}
		err := c.start(ctx, o, bins)
		if err == nil {
			log.Info("Local control plane ready", "dir", dir, "host", c.admin.Host, "took", time.Since(began).Round(time.Millisecond))
			return c, nil
		}
		stopErr := c.stopProcesses()
		var exit *ExitError
		if errors.As(err, &exit) && isPortInUse(exit) && attempt < startAttempts && stopErr == nil {
			log.Info("Port taken by another process, retrying with other ports", "process", exit.Process, "attempt", attempt)
			continue
		}
		if ownsDir {
			stopErr = errors.Join(stopErr, os.RemoveAll(dir))
		}
		return nil, errors.Join(err, stopErr)
	}
}

func (c *Cluster) start(ctx context.Context, o Options, bins binaries) error {
	log := logr.FromContextOrDiscard(ctx)
	free, err := FreePorts(3)
	if err != nil {
		return err
	}
	p := ports{etcdClient: free[0], etcdPeer: free[1], apiserver: free[2]}
	// A retry starts from an empty etcd.
	if err := os.RemoveAll(c.layout.etcdData()); err != nil {
		return fmt.Errorf("clearing etcd data: %w", err)
	}
	if err := os.MkdirAll(c.layout.kwokHome(), 0o755); err != nil {
		return fmt.Errorf("creating kwok home: %w", err)
	}
	creds, err := writeCredentials(c.layout, p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.layout.schedulerConfig(), schedulerConfig(c.layout), 0o644); err != nil {
		return fmt.Errorf("writing scheduler configuration: %w", err)
	}
	c.admin = &rest.Config{
		Host: "https://127.0.0.1:" + strconv.Itoa(p.apiserver),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: creds.caPEM, CertData: creds.admin.CertPEM, KeyData: creds.admin.KeyPEM,
		},
		QPS:   100,
		Burst: 200,
	}
	client, err := kubernetes.NewForConfig(c.admin)
	if err != nil {
		return fmt.Errorf("building admin client: %w", err)
	}
	lines := commandLines(c.layout, p, bins.stages, o.ExtraArgs)
	run := func(name string) error {
		proc, err := supervise.Start(supervise.Command{
			Name: name, Binary: bins.paths[name], Args: lines[name].args, Env: lines[name].env, LogPath: c.layout.log(name),
		})
		if err != nil {
			return err
		}
		c.procs = append(c.procs, proc)
		log.V(2).Info("Started process", "process", name, "pid", proc.Pid(), "log", proc.LogPath())
		return nil
	}

	if err := run(Etcd); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "etcd to be healthy", etcdHealthy(p.etcdClient)); err != nil {
		return err
	}
	if err := run(KubeAPIServer); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "kube-apiserver to be ready", apiserverReady(client)); err != nil {
		return err
	}
	if err := createNodes(ctx, client, o); err != nil {
		return err
	}
	for _, name := range []string{KubeControllerManager, KubeScheduler, Kwok} {
		if err := run(name); err != nil {
			return err
		}
	}
	if err := c.waitFor(ctx, "the kwok nodes to be Ready and untainted", nodesSchedulable(client, o.Nodes)); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the default ServiceAccount", defaultServiceAccount(client)); err != nil {
		return err
	}
	return c.waitFor(ctx, "kube-scheduler and kube-controller-manager to hold their leases", leasesHeld(client, KubeScheduler, KubeControllerManager))
}

// condition is one readiness check; an error is remembered for the timeout message.
type condition func(ctx context.Context) (bool, error)

// waitFor polls cond until it holds, a process exits, or ctx ends.
func (c *Cluster) waitFor(ctx context.Context, what string, cond condition) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var last error
	for {
		if err := c.Err(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			var tails strings.Builder
			for _, p := range c.procs {
				fmt.Fprintf(&tails, "\n--- last lines of %s:\n%s", p.LogPath(), supervise.TailFile(p.LogPath(), 10))
			}
			return fmt.Errorf("waiting for %s: %w (last error: %v)%s", what, ctx.Err(), last, tails.String())
		case <-ticker.C:
		}
	}
}

// Err returns an *ExitError for the first process that has exited although Stop was
// not called, or nil while every process runs.
func (c *Cluster) Err() error {
	for _, p := range c.procs {
		if err := p.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops every process, the last started first, and removes the directory if
// Start created it. It is idempotent; later calls return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = c.stopProcesses()
		if c.ownsDir {
			if err := os.RemoveAll(c.dir); err != nil {
				c.stopErr = errors.Join(c.stopErr, fmt.Errorf("removing cluster directory: %w", err))
			}
		}
	})
	return c.stopErr
}

func (c *Cluster) stopProcesses() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].Stop(stopGrace))
	}
	return errors.Join(errs...)
}

// Config returns a copy of the administrator's client configuration (a client
// certificate in system:masters).
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.admin) }

// KubeconfigPath is the administrator's kubeconfig file.
func (c *Cluster) KubeconfigPath() string { return c.layout.kubeconfig(adminUser) }

// Dir is the directory with the cluster's certificates, kubeconfigs, data and logs.
func (c *Cluster) Dir() string { return c.dir }

// LogPath is the log file of the named process (Etcd, KubeAPIServer, ...).
func (c *Cluster) LogPath(process string) string { return c.layout.log(process) }

// Pids returns the process id of each running process by name; each is also the id
// of the process group the process leads.
func (c *Cluster) Pids() map[string]int {
	pids := map[string]int{}
	for _, p := range c.procs {
		pids[p.Name()] = p.Pid()
	}
	return pids
}
