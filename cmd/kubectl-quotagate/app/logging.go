package app

import (
	"flag"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// addVerbosityFlag adds kubectl's -v: the level of the libraries' logs (client-go's,
// controller-runtime's) on stderr. At 0, the default, the plugin says what goes wrong
// itself and the libraries' logs are dropped; at 6 client-go logs each request, as
// kubectl -v=6 does.
func addVerbosityFlag(cmd *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	v := pflag.PFlagFromGoFlag(fs.Lookup("v"))
	v.Shorthand = "v"
	v.Usage = "Log level of the libraries' logs on stderr, as kubectl's -v (0: none; 6: each request)."
	cmd.PersistentFlags().AddFlag(v)
}

// libraryLogger is controller-runtime's logger in the plugin: klog's (stderr, as
// kubectl logs) at -v=1 and above, nothing below.
func libraryLogger() logr.Logger { return logr.New(verboseOnly{klog.NewKlogr().GetSink()}) }

// verboseOnly passes logs to its sink only at -v=1 and above.
type verboseOnly struct{ logr.LogSink }

func verbose() bool { return klog.V(1).Enabled() }

func (s verboseOnly) Enabled(level int) bool { return verbose() && s.LogSink.Enabled(level) }

func (s verboseOnly) Error(err error, msg string, keysAndValues ...any) {
	if verbose() {
		s.LogSink.Error(err, msg, keysAndValues...)
	}
}

func (s verboseOnly) WithValues(keysAndValues ...any) logr.LogSink {
	return verboseOnly{s.LogSink.WithValues(keysAndValues...)}
}

func (s verboseOnly) WithName(name string) logr.LogSink { return verboseOnly{s.LogSink.WithName(name)} }
