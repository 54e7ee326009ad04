package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/quotagate/quotagate/test/localcluster"
)

// The files of the state directory.
const (
	pidFile     = "serve.pid" // the background process's pid, also its session id
	serveLog    = "serve.log" // its output
	readyFile   = "ready"     // written once the cluster is ready: the kubeconfig path
	clusterDir  = "cluster"   // the cluster's own directory (certificates, data, logs)
	serveSubcmd = "serve"
)

// upTimeout bounds how long up waits for the background cluster to be ready.
const upTimeout = 5 * time.Minute

// clusterFlags are the options up passes on to serve.
type clusterFlags struct {
	stateDir    string
	nodes       int
	nodeCPU     string
	nodeMemory  string
	nodeMaxPods int
}

func (f *clusterFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.stateDir, "dir", "", "state directory (default <repo>/_output/localcluster)")
	fs.IntVar(&f.nodes, "nodes", 4, "number of kwok nodes")
	fs.StringVar(&f.nodeCPU, "node-cpu", "32", "CPU capacity of each node")
	fs.StringVar(&f.nodeMemory, "node-memory", "256Gi", "memory capacity of each node")
	fs.IntVar(&f.nodeMaxPods, "node-max-pods", 110, "pod capacity of each node")
}

// args renders the flags for the serve command line.
func (f *clusterFlags) args() []string {
	return []string{
		"--dir=" + f.stateDir,
		fmt.Sprintf("--nodes=%d", f.nodes),
		"--node-cpu=" + f.nodeCPU,
		"--node-memory=" + f.nodeMemory,
		fmt.Sprintf("--node-max-pods=%d", f.nodeMaxPods),
	}
}

func (f *clusterFlags) options() localcluster.Options {
	return localcluster.Options{
		Nodes:       f.nodes,
		NodeCPU:     f.nodeCPU,
		NodeMemory:  f.nodeMemory,
		NodeMaxPods: f.nodeMaxPods,
		Dir:         filepath.Join(f.stateDir, clusterDir),
	}
}

// resolveStateDir fills in the default state directory.
func (f *clusterFlags) resolveStateDir() error {
	if f.stateDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		root, err := localcluster.RepoRoot(wd)
		if err != nil {
			return fmt.Errorf("finding the repository (or pass --dir): %w", err)
		}
		f.stateDir = filepath.Join(root, "_output", "localcluster")
	}
	abs, err := filepath.Abs(f.stateDir)
	f.stateDir = abs
	return err
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "localcluster",
		Short:         "Start and stop a local Kubernetes control plane with kwok nodes",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	var f clusterFlags
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the control plane in the background and print its kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolveStateDir(); err != nil {
				return err
			}
			return up(cmd.Context(), cmd.OutOrStdout(), &f)
		},
	}
	f.add(up.Flags())
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop the control plane started by up and remove its state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolveStateDir(); err != nil {
				return err
			}
			return down(cmd.OutOrStdout(), f.stateDir)
		},
	}
	down.Flags().StringVar(&f.stateDir, "dir", "", "state directory (default <repo>/_output/localcluster)")
	serve := &cobra.Command{
		Use:    serveSubcmd,
		Short:  "Run the control plane in the foreground until SIGTERM (what up runs in the background)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolveStateDir(); err != nil {
				return err
			}
			return serve(cmd.Context(), &f)
		},
	}
	f.add(serve.Flags())
	root.AddCommand(up, down, serve)
	return root
}
