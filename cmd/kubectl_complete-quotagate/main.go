// Command kubectl_complete-quotagate is the shell completion of the kubectl quotagate
// plugin, by kubectl's convention for plugins (kubectl 1.26 and later): when the user
// presses TAB after "kubectl quotagate", kubectl runs kubectl_complete-quotagate from
// the PATH with the words typed after "quotagate", the last one the word being
// completed, and passes its output, cobra's completion protocol, to the shell.
//
// It runs "kubectl-quotagate __complete ARGS...", so the plugin's own commands, flags
// and their completion functions answer; it stays small rather than linking the
// plugin a second time. kubectl-quotagate is looked for beside this executable (its
// symlinks resolved, so a link into a krew store finds the plugin there), then on the
// PATH.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// plugin is the plugin's executable name.
const plugin = "kubectl-quotagate"

func main() {
	path, err := findPlugin()
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	cmd := exec.Command(path, append([]string{"__complete"}, os.Args[1:]...)...) //nolint:gosec // the plugin, with the words kubectl passes
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintf(os.Stderr, "error: running %s: %v\n", path, err)
		os.Exit(1)
	}
}

// findPlugin returns the plugin beside this executable, else the one on the PATH.
func findPlugin() (string, error) {
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			beside := filepath.Join(filepath.Dir(real), plugin)
			if info, err := os.Stat(beside); err == nil && !info.IsDir() {
				return beside, nil
			}
		}
	}
	path, err := exec.LookPath(plugin)
	if err != nil {
		return "", fmt.Errorf("%s is neither beside %s nor on the PATH: %w", plugin, os.Args[0], err)
	}
	return path, nil
}
