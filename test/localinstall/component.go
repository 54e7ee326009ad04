package localinstall

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/quotagate/quotagate/test/supervise"
)

// component is one of the chart's Deployments, run as a process on this machine with
// the arguments of the Deployment's container and local addresses.
type component struct {
	name                   string
	port, metrics, probes  int // local ports; port is the webhook server's
	visibility             int // the manager's visibility server's local port
	serviceAccount         string
	args, env              []string
	binary, logPath, kconf string

	mu   sync.Mutex
	proc *supervise.Process
}

// configure derives a component's command line from its Deployment in the release:
// the container's arguments with local addresses, and a kubeconfig for the pod's
// ServiceAccount in place of the token a pod would get mounted.
func (i *Installation) configure(ctx context.Context, comp *component, objs []*unstructured.Unstructured) error {
	dep, err := deployment(objs, comp.name)
	if err != nil {
		return err
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	if len(ctr.Command) == 0 {
		return fmt.Errorf("deployment %s: container %s has no command", dep.Name, ctr.Name)
	}
	set := comp.localAddresses(ctr.Args)
	if comp.name == webhookName {
		set["cert-dir"] = i.certDir()
	}
	if comp.name == managerName {
		if servesVisibility(ctr.Args) {
			// Standbys forward to the leader at the address it advertises; every
			// replica here is on 127.0.0.1.
			set["visibility-cert-dir"] = i.certDir()
			set["visibility-advertise-host"] = "127.0.0.1"
		}
		if i.selfManaged {
			i.selfManagedFlags(set, ctr.Args)
		}
	}
	comp.args = withFlags(ctr.Args, set)
	comp.binary = filepath.Join(i.opts.BinDir, path.Base(ctr.Command[0]))
	comp.logPath = filepath.Join(i.opts.Dir, comp.name+".log")
	if sa := serviceAccountOf(dep); sa != comp.serviceAccount || comp.kconf == "" {
		comp.serviceAccount = sa
		if comp.kconf, err = i.serviceAccountKubeconfig(ctx, comp.name, sa); err != nil {
			return err
		}
	}
	comp.env = []string{"KUBECONFIG=" + comp.kconf, "POD_NAMESPACE=" + i.opts.Namespace}
	for _, e := range ctr.Env {
		if e.ValueFrom == nil {
			comp.env = append(comp.env, e.Name+"="+e.Value)
		}
	}
	return nil
}

// localAddresses are the flags that move the listeners of a component with the
// command line args to its local ports.
func (comp *component) localAddresses(args []string) map[string]string {
	local := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	set := map[string]string{
		"metrics-bind-address":      local(comp.metrics),
		"health-probe-bind-address": local(comp.probes),
	}
	switch {
	case comp.name == webhookName:
		set["port"] = strconv.Itoa(comp.port)
		set["host"] = "127.0.0.1"
	case comp.name == managerName && servesVisibility(args):
		set["visibility-bind-address"] = local(comp.visibility)
	}
	return set
}

// servesVisibility reports whether a manager with these args serves the visibility API.
func servesVisibility(args []string) bool {
	v := flagValue(args, "visibility-bind-address")
	return v != "" && v != "0"
}

func serviceAccountOf(dep *appsv1.Deployment) string {
	if sa := dep.Spec.Template.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return "default"
}

// serviceAccountKubeconfig writes <Dir>/<user>.kubeconfig with a token of the
// ServiceAccount (TokenRequest API), as a pod of user would have mounted, and returns
// its path.
func (i *Installation) serviceAccountKubeconfig(ctx context.Context, user, sa string) (string, error) {
	cfg, err := i.cluster.ServiceAccountConfig(ctx, i.opts.Namespace, sa, tokenTTL)
	if err != nil {
		return "", err
	}
	p := filepath.Join(i.opts.Dir, user+".kubeconfig")
	if err := i.cluster.WriteKubeconfig(cfg, p); err != nil {
		return "", err
	}
	return p, nil
}

// start runs a component and waits for its /readyz.
func (i *Installation) start(ctx context.Context, comp *component) error {
	proc, err := supervise.Start(supervise.Command{
		Name: comp.name, Binary: comp.binary, Args: comp.args, Env: comp.env, LogPath: comp.logPath,
		// A restarted component keeps its earlier runs' output in the same log.
		AppendLog: true,
	})
	if err != nil {
		return err
	}
	comp.mu.Lock()
	comp.proc = proc
	comp.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, i.opts.Timeout)
	defer cancel()
	if err := waitReady(wctx, proc, "http://127.0.0.1:"+strconv.Itoa(comp.probes)+"/readyz"); err != nil {
		return err
	}
	switch comp.name {
	case webhookName:
		i.svc.route("127.0.0.1:" + strconv.Itoa(comp.port))
	case managerName:
		if comp == i.manager {
			i.visSvc.route("127.0.0.1:" + strconv.Itoa(comp.visibility))
		} else {
			i.visSvc.add("127.0.0.1:" + strconv.Itoa(comp.visibility)) // a replica
		}
	}
	return nil
}

// process is the component's current process, nil before its first start.
func (comp *component) process() *supervise.Process {
	comp.mu.Lock()
	defer comp.mu.Unlock()
	return comp.proc
}

func (comp *component) stop() error {
	if p := comp.process(); p != nil {
		return p.Stop(stopGrace)
	}
	return nil
}

func (comp *component) err() error {
	if p := comp.process(); p != nil {
		return p.Err()
	}
	return nil
}
