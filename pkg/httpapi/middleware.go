package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config"
)

const principalKey = "principal"

// requestID tags each HTTP request with an id (the caller's X-Request-Id if
// it is short and plain, else a fresh one), returned in the response and
// carried in the context for every log line of the request.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !plainToken(id, 64) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		r := c.Request()
		c.SetRequest(r.WithContext(withHTTPRequestID(r.Context(), id)))
		return next(c)
	}
}

// answeredKey is the echo context key of the moment a handler had its
// answer and went on to wait because the buyer asked it to (postOrder's
// ?wait=).
const answeredKey = "answered"

// markAnswered records that the request's own work is done: what follows
// is a wait the buyer asked for, which the request's duration leaves out,
// so the order latency's histogram and alert keep timing the admission.
func markAnswered(c echo.Context) { c.Set(answeredKey, time.Now()) }

// served is how long the request took, up to markAnswered if it was called.
func served(c echo.Context, start time.Time) time.Duration {
	if t, ok := c.Get(answeredKey).(time.Time); ok {
		return t.Sub(start)
	}
	return time.Since(start)
}

// observe records metrics and logs failures and slow requests. Tokens are
// never logged: only the route, method, status and duration.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // write the answer now so the status is known
		}
		took := served(c, start)
		s.m.observe(c, took)
		status := c.Response().Status
		if status >= 500 {
			s.log.WarnContext(c.Request().Context(), "request failed", "route", c.Path(), "method", c.Request().Method,
				"status", status, "duration_ms", took.Milliseconds())
		} else {
			s.log.DebugContext(c.Request().Context(), "request", "route", c.Path(), "method", c.Request().Method,
				"status", status, "duration_ms", took.Milliseconds())
		}
		return nil
	}
}

// newVerifier checks tokens with the configured key source (the HS256
// secret, or the identity provider's JWK Set when FLASHSALE_JWT_JWKS_URL is
// set), audience, issuer, lifetime cap and claim names (zero values keep
// pkg/auth's defaults). A JWK Set is fetched here, within
// FLASHSALE_JWT_JWKS_TIMEOUT; if the provider does not answer, the ingress
// starts anyway and answers 401 until the keys arrive. Its refresh goroutine
// lives as long as the process: one ingress has one verifier.
func newVerifier(in config.Ingress, log *slog.Logger) *auth.Verifier {
	opts := []auth.Option{auth.WithAudience(in.JWTAudience), auth.WithIssuer(in.JWTIssuer), auth.WithMaxTTL(in.JWTMaxTTL),
		auth.WithUserClaim(in.JWTUserClaim), auth.WithRoleClaim(in.JWTRoleClaim), auth.WithAdminRole(in.JWTAdminRole),
		auth.WithTokenCache(in.JWTCacheSize)}
	if in.JWTJWKSURL == "" {
		return auth.NewVerifier(in.JWTSecret, opts...)
	}
	roots, err := in.JWKSRootCAs()
	if err != nil {
		// Only a CA file that config.Ingress.Validate refuses gets here.
		panic(fmt.Sprintf("httpapi: FLASHSALE_JWT_JWKS_CA_FILE not validated: %v", err))
	}
	v, err := auth.NewJWKSVerifier(context.Background(), in.JWTJWKSURL, auth.JWKSOptions{
		Refresh: in.JWTJWKSRefresh, MinRefresh: in.JWTJWKSMinRefresh, Timeout: in.JWTJWKSTimeout, Log: log,
		AllowLoopbackHTTP: in.JWTJWKSAllowLoopbackHTTP, RootCAs: roots,
	}, opts...)
	if err != nil {
		// Only a URL that config.Ingress.Validate refuses gets here.
		panic(fmt.Sprintf("httpapi: FLASHSALE_JWT_JWKS_URL not validated: %v", err))
	}
	return v
}

// requireUser verifies the bearer token; 401 otherwise.
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := s.verifier.FromHeader(c.Request().Header.Get(echo.HeaderAuthorization))
		if err != nil {
			s.log.DebugContext(c.Request().Context(), "token refused", "err", err)
			return newErr(http.StatusUnauthorized, "unauthorized", "missing or invalid bearer token")
		}
		c.Set(principalKey, p)
		return next(c)
	}
}

// requireAdmin lets only role "admin" through; 403 otherwise.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !principal(c).Admin {
			return newErr(http.StatusForbidden, "forbidden", "admin role required")
		}
		return next(c)
	}
}

func principal(c echo.Context) auth.Principal {
	p, _ := c.Get(principalKey).(auth.Principal)
	return p
}

// plainToken reports whether v is 1..maxLen characters of [A-Za-z0-9._:-].
func plainToken(v string, maxLen int) bool {
	if v == "" || len(v) > maxLen {
		return false
	}
	for _, c := range v {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}
