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
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	do := func() error { return run(ctx, o) }
	if s.enabled {
		do = func() error { return runScale(ctx, s, o.renderOnly) }
	}
	if err := do(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}
