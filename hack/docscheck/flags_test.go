package docscheck

import (
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	plugin "github.com/quotagate/quotagate/cmd/kubectl-quotagate/app"
	manager "github.com/quotagate/quotagate/cmd/manager/app"
	webhook "github.com/quotagate/quotagate/cmd/webhook/app"
	"github.com/quotagate/quotagate/tools/deploy"
)

// otherToolFlags are the flags the docs use of tools other than quotagate's binaries,
// and the tool: a flag of neither is a quotagate flag that does not exist.
var otherToolFlags = map[string]string{
	"--set":                             "helm",
	"--create-namespace":                "helm",
	"--version":                         "helm",
	"--api-versions":                    "helm",
	"--kube-version":                    "helm",
	"--app-version":                     "helm",
	"--all":                             "helm get values, skopeo copy",
	"--raw":                             "kubectl get",
	"--type":                            "kubectl patch",
	"--clusterrole":                     "kubectl create rolebinding",
	"--serviceaccount":                  "kubectl create rolebinding",
	"--group":                           "kubectl create rolebinding",
	"--image":                           "kubectl run",
	"--dry-run":                         "kubectl run",
	"--restart":                         "kubectl run",
	"--annotations":                     "kubectl run",
	"--for":                             "kubectl events, kubectl wait",
	"--show-managed-fields":             "kubectl get",
	"--manifest-url":                    "kubectl krew install",
	"--build-arg":                       "docker build",
	"--platform":                        "docker build",
	"--format":                          "git log",
	"--ignore-missing":                  "sha256sum -c",
	"--date":                            "git log",
	"--all-platforms":                   "ctr images import",
	"--use-service-account-credentials": "kube-controller-manager",
	"--resource-quota-sync-period":      "kube-controller-manager",
	"--jobs":                            "hack/demo",
	"--bin-dir":                         "hack/demo",
	"--cpu":                             "hack/demo",
	"--keep":                            "hack/demo",
	"--timeout":                         "hack/demo",
	"--install":                         "helm upgrade",
	"--network":                         "gcloud compute firewall-rules create",
	"--source-ranges":                   "gcloud compute firewall-rules create",
	"--target-tags":                     "gcloud compute firewall-rules create",
	"--allow":                           "gcloud compute firewall-rules create",
	"--bogus":                           "none: the plugin's example of an unknown flag's error",
}

// binary is a command quotagate ships, with its subcommands' flags.
type binary struct {
	name string
	root *cobra.Command
}

// binaries are the commands the binaries run, built as their main functions build them.
func binaries() []binary {
	return []binary{
		{"manager", manager.NewCommand()},
		{"webhook", webhook.NewCommand()},
		{"kubectl-quotagate", plugin.NewCommand(genericiooptions.NewTestIOStreamsDiscard())},
	}
}

// flagsOf are the flags a command accepts: its own, its parents' persistent ones, and
// --help.
func flagsOf(c *cobra.Command) []string {
	c.InitDefaultHelpFlag()
	var names []string
	add := func(f *pflag.Flag) { names = append(names, "--"+f.Name) }
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	return names
}

// allFlags are the flags of a command and every subcommand below it.
func allFlags(c *cobra.Command) []string {
	names := flagsOf(c)
	for _, sub := range c.Commands() {
		names = append(names, allFlags(sub)...)
	}
	return names
}

// flagToken is a long flag as the docs write it: --name, --name=value, or a family
// --prefix-* .
var flagToken = regexp.MustCompile(`(?:^|[^\w-])(--[a-z][a-z0-9-]*)(\*?)`)

// docFlags are the flags written in the documents, and where.
type docFlag struct {
	l    line
	name string // --name, or --prefix- for a family
	span string // the code span it is in ("" in prose)
}

func docFlags(t *testing.T) []docFlag {
	var out []docFlag
	for _, file := range append(docFiles(t), valuesFile) {
		for _, l := range readLines(t, file) {
			spans := codeSpans(l)
			if len(spans) == 0 || strings.HasSuffix(file, ".yaml") {
				spans = []string{l.text}
			}
			for _, span := range spans {
				for _, m := range flagToken.FindAllStringSubmatch(span, -1) {
					out = append(out, docFlag{l: l, name: m[1] + m[2], span: span})
				}
			}
		}
	}
	return out
}

func hasFlag(flags []string, name string) bool {
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		return slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, prefix) })
	}
	return slices.Contains(flags, name)
}

// Every --flag in the docs is a flag of the manager, the webhook or the kubectl plugin
// (from the commands they run), or of another tool the docs use (otherToolFlags).
func TestFlagsExist(t *testing.T) {
	var all []string
	var names []string
	for _, b := range binaries() {
		all = append(all, allFlags(b.root)...)
		names = append(names, b.name)
	}
	all = append(all, deployFlags()...)
	names = append(names, "hack/deploy")
	var p problems
	flags := docFlags(t)
	for _, f := range flags {
		if hasFlag(all, f.name) {
			continue
		}
		if _, ok := otherToolFlags[f.name]; ok {
			continue
		}
		p.add(f.l.pos(), "%s: not a flag of %s, nor of another tool the docs use (otherToolFlags)", f.name, strings.Join(names, ", "))
	}
	if len(flags) < 50 {
		t.Errorf("only %d flags found in the docs: the extraction is broken", len(flags))
	}
	p.report(t, "flags that do not exist")
}

// deployFlags are the flags of `go run ./hack/deploy` (make deploy's DEPLOY_FLAGS).
func deployFlags() []string {
	fs := flag.NewFlagSet("deploy", flag.ContinueOnError)
	new(deploy.Options).AddFlags(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return names
}

// commandLine is a code span that runs a quotagate binary: `manager release --all ...`,
// `/webhook --zap-log-level=debug`.
var commandLine = regexp.MustCompile(`^(?:\$\s+)?/?(manager|webhook)((?:\s+[a-z][a-z-]*)*)(?:\s|$)`)

// The flags of a command line that runs the manager or the webhook (or one of their
// subcommands) are that command's.
func TestCommandLineFlagsBelongToTheirCommand(t *testing.T) {
	roots := map[string]*cobra.Command{}
	for _, b := range binaries() {
		roots[b.name] = b.root
	}
	var p problems
	lines := 0
	for _, f := range docFlags(t) {
		m := commandLine.FindStringSubmatch(f.span)
		if m == nil {
			continue
		}
		lines++
		cmd := roots[m[1]]
		path := m[1]
		for _, word := range strings.Fields(m[2]) {
			sub, _, err := cmd.Find([]string{word})
			if err != nil || sub == cmd {
				break
			}
			cmd, path = sub, path+" "+word
		}
		if !hasFlag(flagsOf(cmd), f.name) {
			p.add(f.l.pos(), "%s: not a flag of `%s` (%s)", f.name, path, strings.Join(flagsOf(cmd), " "))
		}
	}
	if lines == 0 {
		t.Error("no manager or webhook command line found in the docs: the extraction is broken (README has `manager release --all ...`)")
	}
	p.report(t, "flags given to a command that does not have them")
}
