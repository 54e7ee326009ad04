package ui

import (
	"bytes"
	"strings"
	"testing"
)

// sseEvent is one event as a browser's EventSource dispatches it.
type sseEvent struct {
	event, id, data string
	retry           bool
}

// parseEventStream parses a text/event-stream body as the HTML Living Standard's
// "Parsing an event stream" does: lines end at CRLF, LF or a bare CR, a blank line
// dispatches, and a line's field name runs to its first colon.
func parseEventStream(body string) []sseEvent {
	var events []sseEvent
	var cur sseEvent
	var data []string
	for len(body) > 0 {
		end := strings.IndexAny(body, "\r\n")
		if end < 0 {
			break // an unterminated last line is never dispatched
		}
		line := body[:end]
		if body[end] == '\r' && end+1 < len(body) && body[end+1] == '\n' {
			end++
		}
		body = body[end+1:]
		if line == "" {
			if data != nil {
				cur.data = strings.Join(data, "\n")
				events = append(events, cur)
			}
			cur, data = sseEvent{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.event = value
		case "id":
			cur.id = value
		case "retry":
			cur.retry = true
		case "data":
			data = append(data, value)
		}
	}
	return events
}

// A tenant writes the text of Events and labels the page shows. Whatever line ends it
// hides in them, the page's stream carries one event of the page's own name and id, with
// the tenant's text as data: no field of the tenant's.
func TestWriteEventKeepsTenantTextInData(t *testing.T) {
	for name, text := range map[string]string{
		"bare CR":      "ok\revent: spoof\rid: 99\rretry: 1\rdata: forged",
		"CRLF":         "ok\r\nevent: spoof\r\nretry: 1",
		"LF":           "ok\nevent: spoof\n\nevent: second\ndata: x",
		"CR then LF":   "ok\r\r\nevent: spoof\n\r",
		"trailing CR":  "ok\r",
		"empty":        "",
		"only newline": "\n",
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeEvent(&b, "view", "7", []byte(text)); err != nil {
				t.Fatal(err)
			}
			got := parseEventStream(b.String())
			want := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text)
			if len(got) != 1 || got[0].event != "view" || got[0].id != "7" || got[0].retry || got[0].data != want {
				t.Fatalf("stream %q parses as %+v; want one event view, id 7, no retry, data %q", b.String(), got, want)
			}
		})
	}
}
