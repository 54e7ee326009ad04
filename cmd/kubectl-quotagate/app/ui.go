package app

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/pkg/ui"
)

func newUICommand(e *env) *cobra.Command {
	var address string
	var open, all bool
	cmd := &cobra.Command{
		Use:   "ui [--address 127.0.0.1:0] [--open] [-A]",
		Short: "Serve a live page of budgets, queues and pods on localhost, with your own rights",
		Long: `Serve a live page on this machine: the budget tree (used, hard, borrowed and lent per
resource, state, problems), each budget's queue in admission order, the pods with a
search by name, one pod's why, history and events, and throughput and waits over the
last hour. It updates by itself from watches, at most 5 times a second.

The page reads the cluster with your kubeconfig, as this plugin does: it shows exactly
what your RBAC lets you read, and what you may not read is named on the page. It is
for the namespace of your context (or -n); with -A, for every namespace, with a
namespace filter.

It listens on 127.0.0.1 on a free port unless --address says otherwise, and prints
the URL to open: the URL carries a random token, which every request needs (the
browser then keeps it in a cookie), so that no other site and no other user of this
machine can read the page. docs/ui.md says more.`,
		Example: `  kubectl quotagate ui -n team-a
  kubectl quotagate ui -A --open
  kubectl quotagate ui --address 127.0.0.1:8089`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := e.restConfig()
			if err != nil {
				return err
			}
			ns := ""
			if !all {
				if ns, err = e.namespace(); err != nil {
					return err
				}
			}
			srv, err := ui.New(ui.Options{Config: cfg, Namespace: ns, Why: e.whyText, Now: e.now})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", address)
			if err != nil {
				return fmt.Errorf("listening on %s: %w", address, err)
			}
			if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
				fmt.Fprintf(e.streams.ErrOut, "Warning: listening on %s, not on loopback: anyone who can reach it and has the URL's token reads the cluster with your credentials\n", a)
			}
			return srv.Run(cmd.Context(), ln, func(url string) {
				fmt.Fprintf(e.streams.Out, "Serving the quotagate UI at %s\n(press Ctrl-C to stop)\n", url)
				if open {
					name, args := browserCommand(runtime.GOOS, url)
					if err := e.openBrowser(name, args...); err != nil {
						fmt.Fprintf(e.streams.ErrOut, "Could not open a browser with %s (%v): open the URL above\n", name, err)
					} else {
						fmt.Fprintf(e.streams.Out, "Opened it with %s\n", name)
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:0", "Address to listen on, host:port (port 0: a free port). Keep it on loopback: anyone who reaches it with the token reads the cluster as you.")
	cmd.Flags().BoolVar(&open, "open", false, "Open the page in the default browser (open on macOS, xdg-open on Linux) and say which command ran.")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Show every namespace you may read, with a namespace filter, instead of one namespace.")
	return cmd
}

// browserCommand is the command that opens url in the default browser on goos: the
// platforms the plugin is released for (tools/release) and, for whoever builds it
// there, Windows.
func browserCommand(goos, url string) (name string, args []string) {
	switch goos {
	case "darwin":
		return "open", []string{url}
	case "windows":
		return "rundll32", []string{"url.dll,FileProtocolHandler", url}
	}
	return "xdg-open", []string{url}
}

// startCommand starts name with args and does not wait for it: env.openBrowser.
func startCommand(name string, args ...string) error {
	return exec.Command(name, args...).Start()
}

// whyText is a pod's explanation as `why` prints it, notes included: the pod page
// shows it as is.
func (e *env) whyText(ctx context.Context, namespace, name string) (string, error) {
	c, err := e.client()
	if err != nil {
		return "", err
	}
	res, err := explainPod(ctx, e, c, client.ObjectKey{Namespace: namespace, Name: name})
	if err != nil {
		return "", err
	}
	// The pod's page shows the estimated start in a field of its own, read from the
	// same visibility API: the explanation leaves it out rather than say it twice.
	res.EstimatedStart = nil
	var b bytes.Buffer
	if err := renderWhy(&b, newOutputFlags(false), res, e.now()); err != nil {
		return b.String(), err
	}
	writeNotes(&b, res.Notes)
	return b.String(), nil
}
