package peers

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// apiWrites reads the API server's count of write requests (POST, PUT, PATCH, DELETE,
// APPLY), by resource and subresource, leaving out nodes and leases.
func (e *env) apiWrites(ctx context.Context) (map[string]float64, error) {
	raw, err := e.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseAPIWrites(raw), nil
}

// settledWrites reads apiWrites every half second until two reads agree (at most 15
// seconds), and returns the last.
func (e *env) settledWrites(ctx context.Context) (map[string]float64, error) {
	var last map[string]float64
	for range 30 {
		w, err := e.apiWrites(ctx)
		if err != nil {
			return nil, err
		}
		if maps.Equal(w, last) {
			break
		}
		last = w
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return last, nil
}

func parseAPIWrites(raw []byte) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "apiserver_request_total{")
		if !ok {
			continue
		}
		labelText, value, ok := strings.Cut(line, "} ")
		if !ok {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(labelText, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		r := labels["resource"]
		if r == "nodes" || r == "leases" {
			continue
		}
		if s := labels["subresource"]; s != "" {
			r += "/" + s
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			out[r] += n
		}
	}
	return out
}
