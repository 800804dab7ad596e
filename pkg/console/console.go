package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Path is where the ingress serves the console, outside /api/v1: it is a
// page for a browser, not part of the API.
const Path = "/admin/console"

//go:embed assets
var assets embed.FS

// Page is the console as served: the HTML with its script and style inlined
// (one request, nothing else to route or cache), and the headers that go
// with it.
type Page struct {
	Body []byte
	// CSP is the Content-Security-Policy: only the inlined script and style
	// (by hash) run, and they may only call this origin. A script injected
	// into the page could read the token; this keeps any from running, and
	// keeps the page from loading anything from elsewhere.
	CSP string
}

// Markers in console.html that the style and the script replace.
const (
	styleMarker  = "/*STYLE*/"
	scriptMarker = "/*SCRIPT*/"
)

// Load returns the page, built once from the embedded assets.
var Load = sync.OnceValues(build)

func build() (Page, error) {
	html, err := assets.ReadFile("assets/console.html")
	if err != nil {
		return Page{}, fmt.Errorf("console: %w", err)
	}
	css, err := assets.ReadFile("assets/console.css")
	if err != nil {
		return Page{}, fmt.Errorf("console: %w", err)
	}
	js, err := assets.ReadFile("assets/console.js")
	if err != nil {
		return Page{}, fmt.Errorf("console: %w", err)
	}
	// Inlined verbatim: a closing tag inside would end the element early.
	if bytes.Contains(bytes.ToLower(js), []byte("</script")) || bytes.Contains(bytes.ToLower(css), []byte("</style")) {
		return Page{}, fmt.Errorf("console: console.js or console.css contains its own closing tag: cannot inline it")
	}
	for _, m := range []string{styleMarker, scriptMarker} {
		if n := bytes.Count(html, []byte(m)); n != 1 {
			return Page{}, fmt.Errorf("console: console.html holds %s %d times, want once", m, n)
		}
	}
	body := bytes.Replace(html, []byte(styleMarker), css, 1)
	body = bytes.Replace(body, []byte(scriptMarker), js, 1)
	csp := strings.Join([]string{
		"default-src 'none'",
		"script-src " + hash(js),
		"style-src " + hash(css),
		"connect-src 'self'",
		"img-src 'self'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
	return Page{Body: body, CSP: csp}, nil
}

// hash is a CSP source for an inline element's exact content.
func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// Handler serves the page with its policy. It answers 500 if the embedded
// assets do not make a page (a broken build; TestPageBuilds catches it).
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := Load()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", p.CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		// Revalidate each time: a console left open across a deploy gets
		// the new page on its next reload.
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(p.Body)
		}
	})
}
