package auth

import (
	"fmt"
	"strconv"
	"strings"
)

// lookupClaim finds the claim called name in c: the top-level claim of that
// exact name when there is one (Auth0's namespaced claims are URLs, dots
// included), else the dot-separated path through nested objects (Keycloak's
// "realm_access.roles").
func lookupClaim(c map[string]any, name string) (any, bool) {
	if v, ok := c[name]; ok {
		return v, true
	}
	var cur any = c
	for _, part := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// hasRole reports whether the claim value v is role, or an array holding it.
// Anything else (a number, an object, a comma list in one string) is no role:
// guessing at formats is how an "administrator" value would become admin.
func hasRole(v any, role string) bool {
	switch r := v.(type) {
	case string:
		return r == role
	case []any:
		for _, e := range r {
			if s, ok := e.(string); ok && s == role {
				return true
			}
		}
	}
	return false
}

// userID reads the user id from the claim called name; it must be a string
// (as "sub" always is) in parseUserID's canonical form.
func userID(c map[string]any, name string) (int64, error) {
	v, ok := lookupClaim(c, name)
	if !ok {
		return 0, fmt.Errorf("claim %q: missing", name)
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("claim %q: %T, not a string", name, v)
	}
	return parseUserID(s)
}

// parseUserID accepts only the canonical decimal form of a positive int64:
// no sign, no spaces, no leading zeros, no overflow, so one user has exactly
// one spelling ("7", never "007").
func parseUserID(sub string) (int64, error) {
	if sub == "" || len(sub) > 19 {
		return 0, fmt.Errorf("user id %q: not a user id", sub)
	}
	for _, c := range sub {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("user id %q: not a decimal user id", sub)
		}
	}
	id, err := strconv.ParseInt(sub, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("user id %q: not a positive int64", sub)
	}
	if strconv.FormatInt(id, 10) != sub {
		return 0, fmt.Errorf("user id %q: leading zeros", sub)
	}
	return id, nil
}
