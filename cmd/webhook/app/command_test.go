package app

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"defaults":          {},
		"bad gate":          {args: []string{"--gate", "not a gate!"}, wantErr: `--gate "not a gate!"`},
		"bad port":          {args: []string{"--port", "70000"}, wantErr: "--port 70000: must be 1 to 65535"},
		"empty certdir":     {args: []string{"--cert-dir", ""}, wantErr: "--cert-dir: must not be empty"},
		"no drain":          {args: []string{"--shutdown-drain", "0"}},
		"negative drain":    {args: []string{"--shutdown-drain", "-1s"}, wantErr: "--shutdown-drain -1s: must not be negative"},
		"exempt DaemonSets": {args: []string{"--exempt-daemonsets", "monitoring/node-exporter,team-a/log-agent.v2"}},
		"exempt DaemonSet without namespace": {
			args: []string{"--exempt-daemonsets", "node-exporter"}, wantErr: `--exempt-daemonsets: exempt DaemonSet "node-exporter": want namespace/name`,
		},
		"exempt DaemonSet with a bad namespace": {
			args: []string{"--exempt-daemonsets", "ok/a,Team_A/agent"}, wantErr: `exempt DaemonSet "Team_A/agent": namespace: a lowercase RFC 1123 label`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parsing %v: %v", tc.args, err)
			}
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// The command as a user runs it: a flag it does not know, or an invalid one, is an
// error that names it, before anything is served; --version and the version
// subcommand print the same line.
func TestCommand(t *testing.T) {
	run := func(args ...string) (string, error) {
		cmd := NewCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(t.Context())
		return out.String(), err
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"--no-such-flag"}, wantErr: "no-such-flag"},
		{args: []string{"--gate", "not a gate!"}, wantErr: `--gate "not a gate!"`},
		{args: []string{"-port", "1"}, wantErr: "unknown shorthand flag: 'p'"},
		{args: []string{"serve"}, wantErr: `unknown command "serve"`},
	} {
		if _, err := run(tc.args...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("webhook %v: error %v, want one containing %q", tc.args, err, tc.wantErr)
		}
	}
	flagOut, err := run("--version")
	if err != nil {
		t.Fatalf("webhook --version: %v", err)
	}
	subOut, err := run("version")
	if err != nil {
		t.Fatalf("webhook version: %v", err)
	}
	if flagOut == "" || flagOut != subOut {
		t.Errorf("webhook --version printed %q and webhook version %q, want the same line", flagOut, subOut)
	}
}
