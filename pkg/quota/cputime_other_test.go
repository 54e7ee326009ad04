//go:build !unix

package quota

import "time"

// cpuTime is not measured here; the benchmarks then report wall time only.
func cpuTime() time.Duration { return 0 }
