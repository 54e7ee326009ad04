package ui

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// serveEvents streams the view that ?view= names (a path and query of this server):
// rendered once at once, then again after each change the watches report, as
// Server-Sent Events of type "view" whose data is the HTML of the page's <main>. A
// rendering equal to the last one sent is not sent again.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	target, err := url.Parse(r.URL.Query().Get("view"))
	if err != nil || !strings.HasPrefix(target.Path, "/") || target.Host != "" || target.Scheme != "" {
		http.Error(w, "?view= must be a path of this server", http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	ctx := r.Context()
	var last []byte
	heartbeat := time.NewTicker(25 * time.Second)
	defer heartbeat.Stop()
	for {
		_, changed := s.notifier.current()
		v, _ := s.render(ctx, target)
		var b bytes.Buffer
		if err := s.tmpl.ExecuteTemplate(&b, "view", v); err != nil {
			return
		}
		if !bytes.Equal(b.Bytes(), last) {
			last = b.Bytes()
			if err := writeEvent(w, "view", strconv.FormatUint(v.Version, 10), last); err != nil {
				return
			}
			flusher.Flush()
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case <-heartbeat.C:
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
					return
				}
				flusher.Flush()
			case <-changed:
				waiting = false
			}
		}
	}
}

// writeEvent writes one Server-Sent Event, each line of data on a data: line. A line
// ends at CRLF, LF or a bare CR, as the text/event-stream grammar ends it (HTML Living
// Standard, "Parsing an event stream"): the view holds text tenants wrote (Event
// messages, labels), and a CR left inside a data: line would start a field of its own
// (event:, id:, retry:) in the browser.
func writeEvent(w io.Writer, event, id string, data []byte) error {
	var b bytes.Buffer
	b.WriteString("event: " + event + "\nid: " + id + "\n")
	for {
		end := bytes.IndexAny(data, "\r\n")
		if end < 0 {
			b.WriteString("data: ")
			b.Write(data)
			b.WriteByte('\n')
			break
		}
		b.WriteString("data: ")
		b.Write(data[:end])
		b.WriteByte('\n')
		if data[end] == '\r' && end+1 < len(data) && data[end+1] == '\n' {
			end++
		}
		data = data[end+1:]
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}
