package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/quotagate/quotagate/bench/estimates"
	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/peers"
	"github.com/quotagate/quotagate/bench/scale"
)

func main() {
	o := figures.DefaultOptions()
	o.AddFlags(flag.CommandLine)
	s := scale.DefaultOptions()
	s.AddFlags(flag.CommandLine)
	po := peers.DefaultOptions()
	po.AddFlags(flag.CommandLine)
	eo := estimates.DefaultOptions()
	eo.AddFlags(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	measure := func() error { return figures.Run(ctx, o) }
	switch {
	case countTrue(s.Enabled, po.Enabled, eo.Enabled) > 1:
		fmt.Fprintln(os.Stderr, "bench: -scale, -peers and -estimates are separate runs; give one")
		os.Exit(2)
	case s.Enabled:
		measure = func() error { return scale.Run(ctx, s, o.RenderOnly) }
	case po.Enabled:
		measure = func() error { return peers.Run(ctx, po, o.RenderOnly) }
	case eo.Enabled:
		measure = func() error { return estimates.Run(ctx, eo, o.RenderOnly) }
	}
	if err := measure(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// countTrue counts the true values among bs.
func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
