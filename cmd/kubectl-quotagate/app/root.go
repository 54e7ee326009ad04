package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/version"
)

// ManagerFlags say where the manager's queue snapshot is read from.
type ManagerFlags struct {
	// Namespace, Service, Port and Scheme name the manager's metrics Service, read
	// through the API server's service proxy.
	Namespace, Service, Port, Scheme string
	// URL, when set, is read directly instead (a manager outside the cluster, or a
	// port-forward), with Token as bearer token (default: the kubeconfig's token).
	URL                   string
	Token                 string
	CAFile                string
	InsecureSkipTLSVerify bool
}

// DefaultManagerFlags match the Helm chart installed as release "quotagate" in
// quotagate-system: Service quotagate-manager-metrics, port 8080, HTTPS.
func DefaultManagerFlags() ManagerFlags {
	return ManagerFlags{Namespace: "quotagate-system", Service: "quotagate-manager-metrics", Port: "8080", Scheme: "https"}
}

// env is what the commands need from the outside world; tests replace it.
type env struct {
	// client reads and watches the API with the user's credentials.
	client func() (client.WithWatch, error)
	// restConfig is the user's rest config, for what needs more than client (ui).
	restConfig func() (*rest.Config, error)
	// snapshots reads the manager's /debug/queues snapshot; nil, nil when the user
	// named no manager (--manager-*): the default install's secure metrics endpoint
	// cannot be read through the API server, and the commands do without it.
	snapshots func() (SnapshotSource, error)
	// queues, when set, reads one budget's queue (the visibility API); queue prefers it
	// to the snapshot.
	queues func() (queueSource, error)
	// podStatus, when set, reads where one gated pod waits (the visibility API); why
	// prefers it to the snapshot.
	podStatus func() (podStatusSource, error)
	// simulations creates PodSimulations (the visibility API); simulate needs it.
	simulations func() (simulationSource, error)
	// namespace is the -n namespace, else the kubeconfig context's namespace.
	namespace func() (string, error)
	// openBrowser starts the command that opens the browser (ui --open).
	openBrowser func(name string, args ...string) error
	now         func() time.Time
	streams     genericiooptions.IOStreams
}

// clientsetFromFlags is a clientset for the kubeconfig the flags name, with the user's
// own credentials.
func clientsetFromFlags(flags *genericclioptions.ConfigFlags) (kubernetes.Interface, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	return cs, nil
}

// NewCommand returns the plugin's root command, reading the cluster from the kubeconfig
// flags kubectl itself has.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	// API warnings are printed as kubectl prints them, once each; without a handler
	// controller-runtime's client would log them through its logger.
	flags.WrapConfigFn = func(cfg *rest.Config) *rest.Config {
		cfg.WarningHandler = rest.NewWarningWriter(streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
		return cfg
	}
	mf := DefaultManagerFlags()
	e := &env{streams: streams, now: time.Now, openBrowser: startCommand}
	var cmd *cobra.Command
	e.client = func() (client.WithWatch, error) {
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		c, err := client.NewWithWatch(cfg, client.Options{Scheme: newScheme()})
		if err != nil {
			return nil, fmt.Errorf("creating the API client: %w", err)
		}
		return c, nil
	}
	e.restConfig = func() (*rest.Config, error) {
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		return cfg, nil
	}
	e.snapshots = func() (SnapshotSource, error) {
		if !managerNamed(cmd) {
			return nil, nil
		}
		if mf.URL != "" {
			cfg, err := flags.ToRESTConfig()
			if err != nil {
				return nil, fmt.Errorf("loading kubeconfig: %w", err)
			}
			token := mf.Token
			if token == "" {
				token = cfg.BearerToken
			}
			return newURLSource(mf.URL, token, mf.CAFile, mf.InsecureSkipTLSVerify)
		}
		cs, err := clientsetFromFlags(flags)
		if err != nil {
			return nil, err
		}
		return &proxySource{clientset: cs, namespace: mf.Namespace, service: mf.Service, port: mf.Port, scheme: mf.Scheme}, nil
	}
	e.queues = func() (queueSource, error) {
		if mf.URL != "" {
			return nil, nil
		}
		cs, err := clientsetFromFlags(flags)
		if err != nil {
			return nil, err
		}
		return visibilityQueues(cs.CoreV1().RESTClient()), nil
	}
	e.podStatus = podStatusFromFlags(flags, &mf)
	e.simulations = simulationsFromFlags(flags)
	e.namespace = func() (string, error) {
		ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return "", fmt.Errorf("reading the namespace from kubeconfig: %w", err)
		}
		return ns, nil
	}
	cmd = newRootCommand(e)
	flags.AddFlags(cmd.PersistentFlags())
	addVerbosityFlag(cmd)
	addManagerFlags(cmd, &mf)
	registerKubeconfigCompletions(cmd, e, flags)
	return cmd
}

// Run runs the plugin with args and returns its exit code. Errors are printed as
// kubectl prints them (cmdutil.CheckErr): "error: " and the message on stderr, exit
// code 1; a flag error adds where to find the command's usage.
//
// The plugin reports what goes wrong itself, so the libraries' logs are dropped unless
// -v asks for them: controller-runtime's logger is set either way, or its first use 30
// seconds into a long command (ui, -w) would print a stack trace saying it was never
// set.
func Run(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	ctrllog.SetLogger(libraryLogger())
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		printError(streams.ErrOut, err)
		return 1
	}
	return 0
}

// printError writes err as kubectl does: "error: <message>", one trailing newline.
func printError(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	fmt.Fprintln(w, strings.TrimRight(msg, "\n"))
}

// managerFlagNames are the flags that name the manager whose snapshot is read.
var managerFlagNames = []string{"manager-namespace", "manager-service", "manager-port", "manager-scheme", "manager-url"}

// managerNamed reports whether the user named the manager on the command line.
func managerNamed(cmd *cobra.Command) bool {
	return slices.ContainsFunc(managerFlagNames, func(name string) bool {
		f := cmd.PersistentFlags().Lookup(name)
		return f != nil && f.Changed
	})
}

func addManagerFlags(cmd *cobra.Command, mf *ManagerFlags) {
	fs := cmd.PersistentFlags()
	fs.StringVar(&mf.Namespace, "manager-namespace", mf.Namespace, "Namespace of the quotagate manager's metrics Service.")
	fs.StringVar(&mf.Service, "manager-service", mf.Service, "Name of the quotagate manager's metrics Service.")
	fs.StringVar(&mf.Port, "manager-port", mf.Port, "Port (number or name) of the manager's metrics Service.")
	fs.StringVar(&mf.Scheme, "manager-scheme", mf.Scheme, "Scheme of the manager's metrics endpoint: https (--metrics-secure, the default) or http.")
	fs.StringVar(&mf.URL, "manager-url", mf.URL, "Read the snapshot from this URL (https://host:port) instead of through the API server's service proxy.")
	fs.StringVar(&mf.Token, "manager-token", mf.Token, "Bearer token for --manager-url (default: the kubeconfig's token, if it has one).")
	fs.StringVar(&mf.CAFile, "manager-ca-file", mf.CAFile, "CA certificate that signed the manager's serving certificate, for --manager-url.")
	fs.BoolVar(&mf.InsecureSkipTLSVerify, "manager-insecure-skip-tls-verify", mf.InsecureSkipTLSVerify, "Do not verify the manager's certificate, for --manager-url (the manager's default certificate is self-signed).")
}

// newRootCommand builds the command tree on an env; NewCommand and the tests call it.
func newRootCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:          "kubectl-quotagate",
		Short:        "Show quotagate budgets and queues, and why a pod waits",
		Long:         "Show quotagate budgets and admission queues, explain why a pod waits, and open or close budgets.",
		SilenceUsage: true,
		// Run prints errors, in kubectl's style rather than cobra's "Error:".
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl quotagate"},
		// Shell completion is kubectl's (kubectl_complete-quotagate runs __complete):
		// a completion command generating scripts for "kubectl-quotagate" would mislead.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	cmd.SetOut(e.streams.Out)
	cmd.SetErr(e.streams.ErrOut)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nSee '%s -h' for help and examples", err, c.CommandPath())
	})
	cmd.AddCommand(newBudgetsCommand(e), newQueueCommand(e), newWhyCommand(e), newSimulateCommand(e), newUsageCommand(e),
		newStateCommand(e, v1alpha1.StateOpen), newStateCommand(e, v1alpha1.StateClosed),
		newUICommand(e), version.NewCommand())
	return cmd
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering client-go types: %v", err))
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering quotagate types: %v", err))
	}
	return s
}

// snapshot reads the snapshot; an unreachable manager is returned as a note, not an
// error, for commands that can do without it.
func (e *env) snapshot(ctx context.Context) (snap *snapshotView, note string, err error) {
	src, err := e.snapshots()
	if err != nil || src == nil {
		return nil, "", err
	}
	s, err := src.Snapshot(ctx)
	if err != nil {
		if isUnreachable(err) {
			return nil, err.Error(), nil
		}
		return nil, "", err
	}
	return newSnapshotView(s), "", nil
}
