package jwtconfig

import "strings"

// shippedJWTSecrets are the defaults this repository once shipped
// (compose.yaml and deploy/local/stack.sh before issue 11). They are public:
// anyone who read the repository can mint admin tokens with them, so the
// ingress refuses to start with one, as it refuses a short secret.
var shippedJWTSecrets = []string{
	"change-me-in-production-0123456789",
	"local-dev-secret-change-me-0123456789",
}

// publicJWTSecret reports whether s is a shipped default or an obvious
// placeholder ("change-me", "changeme" in any case).
func publicJWTSecret(s string) bool {
	for _, d := range shippedJWTSecrets {
		if s == d {
			return true
		}
	}
	l := strings.ToLower(s)
	return strings.Contains(l, "change-me") || strings.Contains(l, "changeme")
}
