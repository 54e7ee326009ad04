package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/test/localcluster"
)

func main() {
	var o options
	flag.IntVar(&o.jobs, "jobs", 30, "How many Jobs the burst has (one CPU each).")
	flag.StringVar(&o.cpu, "cpu", "6", "The Budget's requests.cpu.")
	flag.BoolVar(&o.keep, "keep", false, "Leave the control plane and quotagate running when the burst is done, until Ctrl-C.")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "Give up (and exit non-zero) if the demo has not finished by then, builds included.")
	flag.StringVar(&o.dir, "dir", "", "Directory for the control plane and quotagate's files (default <repo>/_output/demo; emptied first).")
	flag.StringVar(&o.binDir, "bin-dir", "", "Directory with the webhook and manager (and kubectl-quotagate) built already, as make demo builds them; empty: build the webhook and manager into <dir>/bin.")
	flag.Parse()
	// The demo prints its own lines; controller-runtime's client would otherwise warn
	// that it has no logger.
	ctrllog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.complete(); err == nil {
		err = run(ctx, o)
		if err == nil {
			return
		}
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
	}
	os.Exit(1)
}

type options struct {
	jobs    int
	cpu     string
	keep    bool
	timeout time.Duration
	dir     string
	binDir  string
	root    string
}

func (o *options) complete() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if o.root, err = localcluster.RepoRoot(wd); err != nil {
		return fmt.Errorf("run the demo from the quotagate repository: %w", err)
	}
	if o.dir == "" {
		o.dir = filepath.Join(o.root, "_output", "demo")
	}
	if o.dir, err = filepath.Abs(o.dir); err != nil {
		return err
	}
	if o.jobs < 1 {
		return fmt.Errorf("--jobs %d: want at least 1", o.jobs)
	}
	if o.binDir != "" {
		if o.binDir, err = filepath.Abs(o.binDir); err != nil {
			return err
		}
		for _, name := range []string{"webhook", "manager"} {
			if _, err := os.Stat(filepath.Join(o.binDir, name)); err != nil {
				return fmt.Errorf("--bin-dir %s: %w", o.binDir, err)
			}
		}
	}
	return nil
}

// plugin is how the demo tells the user to run the kubectl plugin: the one make demo
// built, else through go run.
func (o *options) plugin() string {
	if o.binDir != "" {
		path := filepath.Join(o.binDir, "kubectl-quotagate")
		if _, err := os.Stat(path); err == nil {
			if rel, err := filepath.Rel(o.root, path); err == nil {
				return rel
			}
			return path
		}
	}
	return "go run ./cmd/kubectl-quotagate"
}
