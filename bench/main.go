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
	po := defaultPeerOptions()
	po.addFlags(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	measure := func() error { return run(ctx, o) }
	if po.enabled {
		measure = func() error { return runPeers(ctx, po) }
	}
	if err := measure(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}
