package localinstall

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/quotagate/quotagate/test/localcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ManagerProcess is one manager process: the one Install starts, or a replica added
// with AddManagerReplica.
type ManagerProcess struct {
	i    *Installation
	comp *component
}

// AddManagerReplica starts one more manager process with the running manager's
// binary, arguments and ServiceAccount on ports of its own, as scaling the manager's
// Deployment up would start another pod: a standby, until the leader's Lease is free.
// Once it is ready, the visibility API's Service sends new connections to it too. A
// replica is not rolled out by Upgrade; Stop stops it.
func (i *Installation) AddManagerReplica(ctx context.Context) (*ManagerProcess, error) {
	base := i.manager.snapshot()
	if base.binary == "" {
		return nil, errors.New("the manager is not running")
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	n := len(i.replicas) + 2
	comp := &component{
		name: managerName, visibility: ports[0], metrics: ports[1], probes: ports[2],
		serviceAccount: i.manager.serviceAccount, binary: base.binary, env: base.env, kconf: i.manager.kconf,
		logPath: filepath.Join(i.opts.Dir, "manager-"+strconv.Itoa(n)+".log"),
	}
	comp.args = withFlags(base.args, comp.localAddresses(base.args))
	i.replicas = append(i.replicas, comp)
	if err := i.start(ctx, comp); err != nil {
		return nil, err
	}
	return &ManagerProcess{i: i, comp: comp}, nil
}

// ManagerProcesses are the running manager processes: the first one Install started
// (or the last rollout), then the replicas in the order they were added.
func (i *Installation) ManagerProcesses() []*ManagerProcess {
	out := []*ManagerProcess{{i: i, comp: i.manager}}
	for _, r := range i.replicas {
		out = append(out, &ManagerProcess{i: i, comp: r})
	}
	return out
}

// VisibilityURL is the address this process advertises as the visibility API's
// leader (https://127.0.0.1:port); "" when the release does not serve the API.
func (p *ManagerProcess) VisibilityURL() string {
	if !servesVisibility(p.comp.args) {
		return ""
	}
	return "https://127.0.0.1:" + strconv.Itoa(p.comp.visibility)
}

// LogPath is the process's log file.
func (p *ManagerProcess) LogPath() string { return p.comp.logPath }

// Kill ends the process with SIGKILL, as a node failure would: it does not release its
// Lease, so a standby takes over only when the Lease expires. The visibility Service
// stops sending it connections.
func (p *ManagerProcess) Kill() error {
	proc := p.comp.process()
	if proc == nil {
		return fmt.Errorf("manager process %s was never started", p.comp.logPath)
	}
	p.i.visSvc.remove("127.0.0.1:" + strconv.Itoa(p.comp.visibility))
	return proc.Kill()
}

// VisibilityLeader is the visibility address the leading manager publishes (the
// Lease <leader-election-id>-visibility in the release namespace), "" while none does.
func (i *Installation) VisibilityLeader(ctx context.Context) (string, error) {
	id := flagValue(i.manager.args, "leader-election-id")
	if id == "" {
		id = defaultLeaderElectionID
	}
	lease, err := i.client.CoordinationV1().Leases(i.opts.Namespace).Get(ctx, id+"-visibility", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the visibility leader's Lease: %w", err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// defaultLeaderElectionID is the manager's --leader-election-id default.
const defaultLeaderElectionID = "quotagate-manager"
