package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

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
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	measure := func() error { return figures.Run(ctx, o) }
	switch {
	case s.Enabled && po.Enabled:
		fmt.Fprintln(os.Stderr, "bench: -scale and -peers are separate runs; give one")
		os.Exit(2)
	case s.Enabled:
		measure = func() error { return scale.Run(ctx, s, o.RenderOnly) }
	case po.Enabled:
		measure = func() error { return peers.Run(ctx, po, o.RenderOnly) }
	}
	if err := measure(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}
