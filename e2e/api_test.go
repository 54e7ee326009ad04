//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// tableAccept asks the API server for the Table kubectl prints.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// table reads a list the way `kubectl get` does and returns each row as column name ->
// cell, keyed by object name.
func table(ctx context.Context, cfg *rest.Config, absPath string) (map[string]map[string]string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath(absPath).SetHeader("Accept", tableAccept).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("GET %s as Table: %w", absPath, err)
	}
	var tbl metav1.Table
	if err := json.Unmarshal(raw, &tbl); err != nil {
		return nil, fmt.Errorf("decoding Table: %w", err)
	}
	rows := map[string]map[string]string{}
	for _, r := range tbl.Rows {
		row := map[string]string{}
		for n, col := range tbl.ColumnDefinitions {
			if n < len(r.Cells) {
				row[col.Name] = fmt.Sprint(r.Cells[n])
			}
		}
		rows[row["Name"]] = row
	}
	return rows, nil
}

// podEvents returns the reasons of the events about a pod, oldest first.
func podEvents(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) ([]corev1.Event, error) {
	list, err := cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod.Name, "involvedObject.kind": "Pod"}.String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing events of pod %s: %w", pod.Name, err)
	}
	return list.Items, nil
}

// scrape GETs a Prometheus text endpoint with token (none if empty) and returns the
// HTTP status and the samples by series (name plus labels as printed).
func scrape(ctx context.Context, url, token string) (int, map[string]string, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The manager serves its metrics with a self-signed certificate, as
		// controller-runtime does when no certificate is given; Prometheus is usually
		// configured with insecureSkipVerify for it too.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	samples := map[string]string{}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, samples, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			samples[line[:i]] = line[i+1:]
		}
	}
	return resp.StatusCode, samples, sc.Err()
}

// sumOf adds the samples of a metric over all its label sets.
func sumOf(samples map[string]string, name string) (float64, bool) {
	var sum float64
	found := false
	for series, v := range samples {
		if series != name && !strings.HasPrefix(series, name+"{") {
			continue
		}
		var f float64
		if _, err := fmt.Sscan(v, &f); err == nil {
			sum += f
			found = true
		}
	}
	return sum, found
}

func fatalIf(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
