package console

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

var (
	inlineScript = regexp.MustCompile(`(?s)<script>(.*)</script>`)
	inlineStyle  = regexp.MustCompile(`(?s)<style>(.*)</style>`)
	// Anything that would make the page load something: an attribute
	// naming a resource, a CSS import or url(), a URL with a scheme.
	fetches = regexp.MustCompile(`(?i)\b(src|href|action)\s*=|@import|url\(|\b(https?|wss?):|//[a-z0-9.-]+\.[a-z]{2,}/`)
)

// TestPageBuilds: the embedded assets make one page whose inlined script and
// style are exactly what the policy's hashes allow (a mismatch and the
// browser would run nothing), that loads nothing from anywhere, and that is
// served with its policy.
func TestPageBuilds(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	body := string(p.Body)
	for _, c := range []struct {
		name, directive string
		re              *regexp.Regexp
	}{{"script", "script-src", inlineScript}, {"style", "style-src", inlineStyle}} {
		m := c.re.FindAllStringSubmatch(body, -1)
		if len(m) != 1 {
			t.Fatalf("page has %d inline %s elements, want 1", len(m), c.name)
		}
		sum := sha256.Sum256([]byte(m[0][1]))
		want := c.directive + " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(p.CSP, want) {
			t.Errorf("policy %q does not allow the inlined %s (want %q)", p.CSP, c.name, want)
		}
		if len(m[0][1]) < 500 {
			t.Errorf("inlined %s is %d bytes: the marker was not replaced", c.name, len(m[0][1]))
		}
	}
	if strings.Contains(body, styleMarker) || strings.Contains(body, scriptMarker) {
		t.Error("a marker is left in the page")
	}
	if loc := fetches.FindAllString(body, -1); loc != nil {
		t.Errorf("the page refers to resources %q: it must load nothing (no CDN, no other file)", loc)
	}
	for _, d := range []string{"default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(p.CSP, d) {
			t.Errorf("policy %q lacks %q", p.CSP, d)
		}
	}

	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	if rec.Code != http.StatusOK || rec.Body.String() != body {
		t.Fatalf("handler: %d, %d bytes, want 200 and the page (%d bytes)", rec.Code, rec.Body.Len(), len(body))
	}
	for k, want := range map[string]string{"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": p.CSP,
		"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}
