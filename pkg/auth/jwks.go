package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"golang.org/x/time/rate"
)

// Defaults of JWKSOptions.
const (
	DefaultJWKSRefresh    = 10 * time.Minute
	DefaultJWKSMinRefresh = 30 * time.Second
	DefaultJWKSTimeout    = 2 * time.Second
)

// jwksMethods are the algorithms a JWKS verifier accepts: the asymmetric
// ones. HS* is not among them, so no token can make a public key of the set
// serve as an HMAC secret, and "none" is not either.
var jwksMethods = []string{
	"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
}

// ErrNoKeys is what Ready answers while a JWKS verifier has no key yet (the
// identity provider has not answered since start-up).
var ErrNoKeys = errors.New("auth: no keys from the JWKS yet")

// JWKSOptions tune how a JWKS verifier keeps the provider's keys. Zero
// values take the defaults.
type JWKSOptions struct {
	// Refresh is the interval of the background refresh, which picks up new
	// keys before tokens use them and drops revoked ones.
	Refresh time.Duration
	// MinRefresh is the least time between two refreshes triggered by a
	// token whose kid is unknown (a key rotated in since the last fetch), so
	// a flood of made-up kids costs the provider one request per MinRefresh.
	// Keep it above Timeout: a request then never queues for the limiter.
	MinRefresh time.Duration
	// Timeout bounds every fetch: the first one at start-up, each refresh,
	// and so the wait of the one request whose unknown kid triggered a
	// refresh. Requests with a known kid never wait on the provider.
	Timeout time.Duration
	// Log gets the fetch failures (default slog.Default()).
	Log *slog.Logger
	// AllowLoopbackHTTP lets the URL (and its redirects) be plain http to a
	// loopback address; https is required otherwise (CheckJWKSURL).
	AllowLoopbackHTTP bool
	// RootCAs verifies the provider's certificate (nil: the system's roots),
	// for an identity provider behind a private CA.
	RootCAs *x509.CertPool
}

func (o JWKSOptions) withDefaults() JWKSOptions {
	if o.Refresh <= 0 {
		o.Refresh = DefaultJWKSRefresh
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = DefaultJWKSMinRefresh
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultJWKSTimeout
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

// NewJWKSVerifier returns a Verifier of tokens signed with the keys of the
// JWK Set at url, with the default policy changed by opts. The URL must be
// https, or plain http to a loopback address with jo.AllowLoopbackHTTP
// (CheckJWKSURL); anything else is an error. It fetches the
// set once, within jo.Timeout; when that fails it still returns a verifier,
// which refuses every token (Ready answers ErrNoKeys) until a refresh
// brings keys: an identity provider that blips while the ingress starts must
// not stop it for good. ctx ends the background refresh.
//
// The keys are kept by github.com/MicahParks/keyfunc (and jwkset, which
// parses them): a token's kid selects its key, the key's own "alg" must be
// the token's, keys marked "use": "enc" are not used for signatures, and a
// token without kid is tried against every key of its algorithm.
func NewJWKSVerifier(ctx context.Context, url string, jo JWKSOptions, opts ...Option) (*Verifier, error) {
	jo = jo.withDefaults()
	if err := CheckJWKSURL(url, jo.AllowLoopbackHTTP); err != nil {
		return nil, fmt.Errorf("auth: jwks %s: %w", url, err)
	}
	log := jo.Log.With("jwks_url", url)
	keepGoing := true
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{url}, keyfunc.Override{
		Client:                    jwksClient(jo),
		HTTPTimeout:               jo.Timeout,
		NoErrorReturnFirstHTTPReq: &keepGoing,
		RefreshInterval:           jo.Refresh,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(jo.MinRefresh), 1),
		// Bounds the limiter wait and the refresh of an unknown kid, both
		// in the request that carries it.
		RateLimitWaitMax: jo.Timeout,
		RefreshErrorHandlerFunc: func(string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				log.WarnContext(ctx, "jwks fetch failed; cached keys stay in use", "err", err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("auth: jwks %s: %w", url, err)
	}
	store := kf.Storage()
	kf, err = keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: store, UseWhitelist: []jwkset.USE{jwkset.UseSig, ""}})
	if err != nil {
		return nil, fmt.Errorf("auth: jwks %s: %w", url, err)
	}
	ready := func(ctx context.Context) error {
		keys, err := store.KeyReadAll(ctx)
		if err != nil {
			return fmt.Errorf("auth: jwks: %w", err)
		}
		if len(keys) == 0 {
			return ErrNoKeys
		}
		return nil
	}
	if err := ready(ctx); err != nil {
		log.ErrorContext(ctx, "jwks has no keys yet; every token is refused (401) until the identity provider answers",
			"retry_every", jo.Refresh, "or_on_unknown_kid_every", jo.MinRefresh)
	}
	p := newPolicy(opts)
	return &Verifier{policy: p, parser: newParser(p, jwksMethods), keyfunc: kf.Keyfunc, ready: ready, cache: cacheFor(p)}, nil
}
