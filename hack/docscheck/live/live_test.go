package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/hack/docscheck/blocks"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/localinstall"
)

// repoRoot is three directories up: go test runs in hack/docscheck/live. The commands
// run there, as a reader runs them from a checkout (config/samples/budget.yaml).
const repoRoot = "../../.."

const pollTimeout = 2 * time.Minute

// watchFor is how long a command with -w runs before it is stopped.
const watchFor = 5 * time.Second

// The docs' world: the README's Budget (config/samples/budget.yaml, 8 CPUs) in team-a,
// filled by fill and train-7-x2x9q, so that train-8-k2p4d and job-7-x2x9q wait for
// requests.cpu, as README.md and docs/what-users-see.md show them.
func TestDocBlocksRun(t *testing.T) {
	all, err := blocks.ReadAll(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(logr.Discard())
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	inst, err := localinstall.Install(t.Context(), cluster, localinstall.Options{})
	if err != nil {
		t.Fatalf("installing quotagate: %v", err)
	}
	t.Cleanup(func() { _ = inst.Stop() })

	bin := t.TempDir()
	build := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(bin, "kubectl-quotagate"), "./cmd/kubectl-quotagate")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	sh := shell{env: append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))}

	for _, line := range []string{
		"kubectl create namespace team-a",
		"kubectl label namespace team-a quotagate.io/enabled=true",
		"kubectl apply -f config/samples/budget.yaml",
	} {
		if out, err := sh.run(t.Context(), line); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	admin := adminClient(t, cluster)
	pod := func(name, cpu string) *corev1.Pod {
		return podtest.New(name).NS("team-a").GracePeriod(0).Container("c", "registry.example/app:1").Req("cpu=" + cpu + ",memory=1Gi").Obj()
	}
	for _, p := range []*corev1.Pod{pod("fill", "7"), pod("train-7-x2x9q", "1")} {
		create(t, admin, p)
		waitGates(t, admin, p.Name, false)
	}
	for _, p := range []*corev1.Pod{pod("train-8-k2p4d", "2"), pod("job-7-x2x9q", "1")} {
		create(t, admin, p)
		waitGates(t, admin, p.Name, true)
	}

	// why says when the pod should start once the manager's estimator has run.
	status := "kubectl get --raw /apis/visibility.quotagate.io/v1alpha1/namespaces/team-a/pendingpods/train-8-k2p4d"
	testbed.Poll(t, pollTimeout, "an estimated start for train-8-k2p4d", func(ctx context.Context) (bool, error) {
		out, err := sh.run(ctx, status)
		return err == nil && strings.Contains(out, `"estimatedStart"`), testbed.NotYet(fmt.Errorf("%v: %s", err, out))
	})

	ran := 0
	for _, b := range all {
		if b.Marked {
			continue
		}
		t.Run(b.Pos(), func(t *testing.T) {
			for _, c := range b.Commands {
				if !strings.HasPrefix(c.Line, "kubectl ") {
					// hack/docscheck says so too: this test runs kubectl and the plugin
					// only, never a make target or an install elsewhere.
					t.Errorf("$ %s\nis not a kubectl command: mark its block <!-- not runnable: why -->", c.Line)
					continue
				}
				out, err := sh.run(t.Context(), c.Line)
				ran++
				t.Logf("$ %s\n%s", c.Line, out)
				wantsError := slices.ContainsFunc(c.Output, func(l string) bool { return strings.HasPrefix(l, "error: ") })
				if err != nil && !wantsError {
					t.Errorf("$ %s\n%v\n%s", c.Line, err, out)
					continue
				}
				if err == nil && wantsError {
					t.Errorf("$ %s\nsucceeded, the doc shows an error:\n%s", c.Line, out)
					continue
				}
				if problem := compare(c.Output, lines(out)); problem != "" {
					t.Errorf("$ %s\n%s\nthe doc shows:\n%s\nit printed:\n%s", c.Line, problem, strings.Join(c.Output, "\n"), out)
				}
			}
		})
	}
	if ran == 0 {
		t.Error("no block ran: the docs have no runnable block, or the reader finds none")
	}
}

// shell runs one command line as a reader types it, in the checkout, with the test's
// kubeconfig and the plugin on the PATH.
type shell struct{ env []string }

func (s shell) run(ctx context.Context, line string) (string, error) {
	args := []string{"-o", "pipefail", "-c", line}
	watch := regexp.MustCompile(`(^|\s)(-w|--watch)(\s|$)`).MatchString(line)
	name := "bash"
	if watch {
		args = append([]string{"-k", "2", watchFor.String(), "bash"}, args...)
		name = "timeout"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot
	cmd.Env = s.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if watch {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 124 {
			err = nil // stopped after watchFor, as a reader stops a watch
		}
	}
	return out.String(), err
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// compare says how got lacks the shape of the output the doc shows, or "".
//
//   - a table (the doc's first line is a header of upper-case columns) must have the
//     same header;
//   - an error line must be printed, numbers aside, word for word;
//   - any other line must be matched, in order, by a line that begins the same way: the
//     same "Label:" or, without one, the same first word. A doc line "..." (output left
//     out) matches nothing.
func compare(doc, got []string) string {
	if len(doc) == 0 {
		return ""
	}
	if cols := header(doc[0]); cols != nil {
		if len(got) == 0 || !slices.Equal(cols, header(got[0])) {
			return fmt.Sprintf("want the header %q", strings.Join(cols, "  "))
		}
		return ""
	}
	i := 0
	for _, d := range doc {
		if strings.TrimSpace(d) == "..." {
			continue
		}
		match := func(g string) bool { return label(g) == label(d) }
		if strings.HasPrefix(d, "error: ") {
			match = func(g string) bool { return numbers.ReplaceAllString(g, "#") == numbers.ReplaceAllString(d, "#") }
		}
		for i < len(got) && !match(got[i]) {
			i++
		}
		if i == len(got) {
			return fmt.Sprintf("no line, in order, like %q", d)
		}
		i++
	}
	return ""
}

var (
	columnSep = regexp.MustCompile(`\s{2,}`)
	upperCol  = regexp.MustCompile(`^[A-Z][A-Z0-9 ./_()-]*$`)
	numbers   = regexp.MustCompile(`\d+(\.\d+)?`)
	labelled  = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z ]{0,30}):`)
)

// header is a table header's columns, or nil when line is not one.
func header(line string) []string {
	cols := columnSep.Split(strings.TrimSpace(line), -1)
	if len(cols) < 2 {
		return nil
	}
	for _, c := range cols {
		if !upperCol.MatchString(c) {
			return nil
		}
	}
	return cols
}

// label is what a line of text begins with: its "Label:", else its first word.
func label(line string) string {
	if m := labelled.FindStringSubmatch(line); m != nil {
		return m[1] + ":"
	}
	if f := strings.Fields(line); len(f) > 0 {
		return f[0]
	}
	return ""
}

func adminClient(t *testing.T, c *localcluster.Cluster) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config(), client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func create(t *testing.T, c client.Client, p *corev1.Pod) {
	t.Helper()
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
}

// waitGates waits until pod team-a/name is gated by quotagate (gated) or admitted.
func waitGates(t *testing.T, c client.Client, name string, gated bool) {
	t.Helper()
	what := "admitted"
	if gated {
		what = "waiting for quota"
	}
	testbed.Poll(t, pollTimeout, "pod team-a/"+name+" to be "+what, func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: name}, &p); err != nil {
			return false, testbed.NotYet(err)
		}
		if !gated {
			return len(p.Spec.SchedulingGates) == 0, nil
		}
		if len(p.Spec.SchedulingGates) == 0 {
			return false, fmt.Errorf("pod team-a/%s was admitted, the docs' world has no room for it", name)
		}
		// The manager has seen it when it has said why it waits.
		var events corev1.EventList
		if err := c.List(ctx, &events, client.InNamespace("team-a")); err != nil {
			return false, testbed.NotYet(err)
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.InvolvedObject.UID == p.UID }), nil
	})
}
