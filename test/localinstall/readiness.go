package localinstall

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/quotagate/quotagate/test/supervise"
)

// waitReady polls url until it answers 200, p exits, or ctx ends.
func waitReady(ctx context.Context, p *supervise.Process, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var last error
	for {
		if err := p.Err(); err != nil {
			return err
		}
		last = probe(ctx, client, url)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be ready at %s: %w (last error: %v); last lines of %s:\n%s",
				p.Name(), url, ctx.Err(), last, p.LogPath(), supervise.TailFile(p.LogPath(), supervise.LogTailLines))
		case <-ticker.C:
		}
	}
}

func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}
