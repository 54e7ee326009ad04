package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/quotagate/quotagate/pkg/quota"
)

// New refuses options it cannot run with, each with a sentence naming what is wrong,
// and fills in what was left zero.
func TestNewChecksOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"no worker", func(o *Options) { o.Workers = 0 }, "workers must be at least 1, got 0"},
		{"no gate", func(o *Options) { o.Gate = "" }, "the gate name must not be empty"},
		{"negative lend hold", func(o *Options) { o.LendHold = -time.Second }, "the lend hold must not be negative, got -1s"},
		{"negative estimate interval", func(o *Options) { o.EstimateInterval = -time.Second }, "the estimate interval must not be negative, got -1s"},
		{"negative estimator bound", func(o *Options) { o.EstimateMaxPods = -1 }, "the estimator's most pods must not be negative, got -1"},
		{"negative preemption cooldown", func(o *Options) { o.PreemptionCooldown = -time.Second }, "the preemption cooldown must not be negative, got -1s"},
		{"a backoff below its cooldown", func(o *Options) { o.PreemptionMaxBackoff = time.Second },
			"the preemption backoff's most (1s) must not be below the cooldown (30s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			tc.change(&opts)
			c, err := New(opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: controller %v, error %v; want an error saying %q", c != nil, err, tc.want)
			}
		})
	}

	c, err := New(Options{Gate: "example.com/gate", Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	o := c.opts
	if o.PriorityCeiling != quota.DefaultPriorityCeiling || o.FlushInterval != quota.DefaultFlushInterval ||
		o.UngateTimeout != DefaultUngateTimeout || o.AdmittedEventInterval != DefaultAdmittedEventInterval ||
		o.Clock == nil || o.Registerer == nil {
		t.Errorf("zero options were not filled in: %+v", o)
	}
}
