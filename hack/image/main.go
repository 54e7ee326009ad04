package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/quotagate/quotagate/tools/ociimage"
)

func main() {
	var o ociimage.Options
	var epoch string
	flag.StringVar(&o.Version, "version", "", "Version: the image's tag and the binaries' version, e.g. v0.2.0.")
	flag.StringVar(&o.Revision, "revision", "", "The git commit the image is built from.")
	flag.StringVar(&o.LDFlags, "ldflags", "", "go build's -ldflags (the Makefile's GO_LDFLAGS).")
	flag.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "The created time, in seconds since 1970; empty: the commit time of HEAD.")
	flag.StringVar(&o.Root, "root", ".", "The module's root.")
	flag.StringVar(&o.BinDir, "bin-dir", "_output/image/bin", "Where the compiled binaries go, one <os>_<arch> directory per platform.")
	flag.StringVar(&o.LayoutDir, "layout", "_output/image/oci", "The OCI layout directory to write (replaced).")
	flag.StringVar(&o.Archive, "archive", "", "The tar of the OCI layout to write; empty: none.")
	flag.Parse()
	if err := run(context.Background(), o, epoch, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o ociimage.Options, epoch string, w io.Writer) error {
	start := time.Now()
	var err error
	if o.Created, err = createdTime(ctx, o.Root, epoch); err != nil {
		return err
	}
	r, err := ociimage.Build(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "image %s (revision %s, created %s)\n", o.Version, o.Revision, ociimage.FormatCreated(o.Created))
	fmt.Fprintf(w, "  index      %s\n", r.Digest)
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "  %-12s %s compressed, %s unpacked\n", s.Platform.String(), mib(s.Compressed), mib(s.Uncompressed))
	}
	fmt.Fprintf(w, "  layout     %s\n", o.LayoutDir)
	if o.Archive != "" {
		fmt.Fprintf(w, "  archive    %s (%s)\n", o.Archive, mib(r.ArchiveSize))
	}
	fmt.Fprintf(w, "  took       %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// createdTime is the image's created time: epoch (seconds since 1970), or the commit
// time of HEAD when epoch is empty.
func createdTime(ctx context.Context, root, epoch string) (time.Time, error) {
	if epoch == "" {
		out, err := exec.CommandContext(ctx, "git", "-C", root, "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, errors.New("no created time: set SOURCE_DATE_EPOCH (seconds since 1970) outside a git checkout")
		}
		epoch = strings.TrimSpace(string(out))
	}
	s, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || s < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want seconds since 1970", epoch)
	}
	return time.Unix(s, 0).UTC(), nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
