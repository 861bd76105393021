package serve

import (
	"html/template"
	"net/http"
)

// page is what every answer shows: html/template escapes each field.
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

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="same-origin">
<title>nsman: {{.Title}}</title>
<style>body{font-family:sans-serif;max-width:40em;margin:2em auto;padding:0 1em}h1{font-size:1.4em}.refused{color:#a00}button{font-size:1.1em;padding:.4em 1em}</style>
</head><body>
<h1{{if .Refused}} class="refused"{{end}} id="title">{{.Title}}</h1>{{if .Done}}<div id="done"></div>{{end}}
{{range .Lines}}<p>{{.}}</p>
{{end}}{{if .Token}}<form method="post" action="">
<input type="hidden" name="t" value="{{.Token}}"><input type="hidden" name="f" value="{{.FormToken}}">
<button type="submit" id="confirm">{{.Button}}</button>
</form>{{end}}
</body></html>
`))

// show writes p with status code.
func show(w http.ResponseWriter, code int, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(code)
	_ = pageTemplate.Execute(w, p)
}
