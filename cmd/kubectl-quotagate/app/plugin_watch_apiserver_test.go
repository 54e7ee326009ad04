package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// testWatch runs queue -w and budgets -w as the tenant while the admin raises team-a's
// hard, which admits a waiting pod each time (a3 and a4 wait, 1 CPU each, with 500m
// free).
func testWatch(t *testing.T, admin client.Client, asTenant func(...string) []string) {
	raise := func(t *testing.T, cpu string) {
		t.Helper()
		patch := []byte(`{"spec":{"hard":{"requests.cpu":"` + cpu + `"}}}`)
		b := &v1alpha1.Budget{}
		b.Namespace, b.Name = "team-a", "team-a"
		if err := admin.Patch(t.Context(), b, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("queue -w prints the pods whose place changes", func(t *testing.T) {
		out, stop := startReal(t, asTenant("queue", "team-a", "-w")...)
		// a3 and a4 were created in the same second: their order is their UIDs'.
		waitOutput(t, out, `(?m)^2 +team-a/a[34] `)
		head, next := "a3", "a4"
		if regexp.MustCompile(`(?m)^1 +team-a/a4 `).MatchString(out.String()) {
			head, next = "a4", "a3"
		}
		raise(t, "3") // admits the head; the next moves up
		waitOutput(t, out, `(?m)^- +team-a/`+head+` .*(admitted|no longer in this queue)$`)
		waitOutput(t, out, `(?m)^1 +team-a/`+next+` .*position 1 of 1$`)
		if err := stop(); err != nil {
			t.Errorf("queue -w: %v", err)
		}
		if n := strings.Count(out.String(), "POSITION"); n != 1 {
			t.Errorf("queue -w printed %d headers, want 1:\n%s", n, out.String())
		}
		t.Logf("kubectl quotagate queue team-a -w (as tenant):\n%s", out.String())
	})

	t.Run("budgets -w prints a budget again when it changes", func(t *testing.T) {
		waitStatus(t, admin, "team-a", "2500m", 1)
		out, stop := startReal(t, asTenant("budgets", "-w")...)
		waitOutput(t, out, `(?m)^Budget team-a/team-a +Open +3 +1 .*\n +requests\.cpu +2500m/3 `)
		raise(t, "4") // admits a4
		waitOutput(t, out, `(?m)^Budget team-a/team-a +Open +4 +0 .*\n +requests\.cpu +3500m/4 `)
		if err := stop(); err != nil {
			t.Errorf("budgets -w: %v", err)
		}
		if n := strings.Count(out.String(), "BUDGET"); n != 1 {
			t.Errorf("budgets -w printed %d headers, want 1:\n%s", n, out.String())
		}
		t.Logf("kubectl quotagate budgets -w (as tenant):\n%s", out.String())
	})
}

// startReal starts the plugin with args, as runReal runs it, until stop is called;
// stop returns what the command returned.
func startReal(t *testing.T, args ...string) (out *testbed.Output, stop func() error) {
	t.Helper()
	out = &testbed.Output{}
	ctx, cancel := context.WithCancel(t.Context())
	cmd := NewCommand(streamsTo(out, io.Discard))
	cmd.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(cancel)
	return out, func() error {
		cancel()
		return <-done
	}
}

// waitOutput waits until out matches the regular expression re.
func waitOutput(t *testing.T, out *testbed.Output, re string) {
	t.Helper()
	r := regexp.MustCompile(re)
	testbed.Poll(t, pollTimeout, "the output to match "+re, func(context.Context) (bool, error) {
		got := out.String()
		if r.MatchString(got) {
			return true, nil
		}
		return false, testbed.NotYet(fmt.Errorf("it is:\n%s", got))
	})
}

func streamsTo(out, errOut io.Writer) genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
}

// buildPluginBinaries builds kubectl-quotagate and kubectl_complete-quotagate into a
// directory, as make build does, and returns it.
func buildPluginBinaries(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", dir+string(filepath.Separator), "./cmd/kubectl-quotagate", "./cmd/kubectl_complete-quotagate")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	return dir
}

// runCompletionBinary runs kubectl_complete-quotagate from dir as kubectl runs it for
// "kubectl quotagate ARGS<TAB>", with a PATH that does not hold the plugin (it finds
// it beside itself), and returns its stdout.
func runCompletionBinary(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(dir, "kubectl_complete-quotagate"), args...)
	cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl_complete-quotagate %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}
