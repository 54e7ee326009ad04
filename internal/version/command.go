package version

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// NewCommand is the `version` subcommand of the manager and the kubectl plugin: the
// version line, or the Info as JSON with -o json.
func NewCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go version this binary was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Print(cmd.OutOrStdout(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: empty for one line, or json.")
	return cmd
}

// Print writes Get() to w as one line (output "") or as JSON (output "json").
func Print(w io.Writer, output string) error {
	i := Get()
	switch output {
	case "":
		_, err := fmt.Fprintln(w, i.String())
		return err
	case "json":
		b, err := json.MarshalIndent(i, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	default:
		return fmt.Errorf("--output %q: must be empty or json", output)
	}
}
