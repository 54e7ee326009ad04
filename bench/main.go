package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	o := defaultOptions()
	o.addFlags(flag.CommandLine)
	s := defaultScaleOptions()
	s.addFlags(flag.CommandLine)
	po := defaultPeerOptions()
	po.addFlags(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	measure := func() error { return run(ctx, o) }
	switch {
	case s.enabled && po.enabled:
		fmt.Fprintln(os.Stderr, "bench: -scale and -peers are separate runs; give one")
		os.Exit(2)
	case s.enabled:
		measure = func() error { return runScale(ctx, s, o.renderOnly) }
	case po.enabled:
		measure = func() error { return runPeers(ctx, po, o.renderOnly) }
	}
	if err := measure(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}
