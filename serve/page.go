package serve

import (
	"html"
	"net/http"
	"strings"
)

// page is what every answer shows, each field escaped as it is written.
type page struct {
	Title string
	// Lines are said one per paragraph.
	Lines []string
	// Token and FormToken, when set, make the button that POSTs the link.
	Token, FormToken string
	Button           string
	// Refused marks a refusal, Done a write done, for the page's style
	// and for a browser to wait on.
	Refused, Done bool
}

// render writes p as HTML, each field through html.EscapeString (text and
// double-quoted attributes alike). Not html/template: executing a template
// keeps every exported method of every type in the binary (reflect's
// MethodByName), which made it 28 MB larger and each sweep's RSS 11 MiB.
func (p page) render() string {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="same-origin">
<title>nsman: ` + esc(p.Title) + `</title>
<style>body{font-family:sans-serif;max-width:40em;margin:2em auto;padding:0 1em}h1{font-size:1.4em}.refused{color:#a00}button{font-size:1.1em;padding:.4em 1em}</style>
</head><body>
<h1`)
	if p.Refused {
		b.WriteString(` class="refused"`)
	}
	b.WriteString(` id="title">` + esc(p.Title) + `</h1>`)
	if p.Done {
		b.WriteString(`<div id="done"></div>`)
	}
	b.WriteString("\n")
	for _, line := range p.Lines {
		b.WriteString("<p>" + esc(line) + "</p>\n")
	}
	if p.Token != "" {
		b.WriteString(`<form method="post" action="">
<input type="hidden" name="t" value="` + esc(p.Token) + `"><input type="hidden" name="f" value="` + esc(p.FormToken) + `">
<button type="submit" id="confirm">` + esc(p.Button) + `</button>
</form>`)
	}
	b.WriteString("\n</body></html>\n")
	return b.String()
}

// show writes p with status code.
func show(w http.ResponseWriter, code int, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(p.render()))
}
