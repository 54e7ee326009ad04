package ui

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"time"
)

// The page's assets ship inside the binary: no CDN, no download at run time, no
// JavaScript build. The templates render every view on the server; static/app.js only
// swaps in the views the server pushes.
//
//go:embed assets/templates.html assets/static
var assets embed.FS

// staticFS is the assets served under /static/.
func staticFS() fs.FS {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(fmt.Sprintf("embedded assets: %v", err))
	}
	return sub
}

func parseTemplates() (*template.Template, error) {
	t, err := template.New("ui").Funcs(template.FuncMap{
		"clock": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return localClock(t)
		},
		"ago": func(now, t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return humanDuration(now.Sub(t)) + " ago"
		},
		"eventTime": eventTime,
	}).ParseFS(assets, "assets/templates.html")
	if err != nil {
		return nil, fmt.Errorf("parsing the page's templates: %w", err)
	}
	return t, nil
}
