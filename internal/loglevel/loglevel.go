// Package loglevel names the verbosities quotagate's manager and webhook log at, so that
// a log level (the chart's logLevel, --zap-log-level) shows the same kind of line in
// both.
package loglevel

const (
	// Events is what happened: a pod gated, ungated, evicted or released.
	Events = 2
	// Details is how it was decided: a pod not gated and why, a retry, a back-off.
	Details = 4
)
