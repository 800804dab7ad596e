// Package auth verifies the bearer tokens of flashsale's API: JWTs whose user
// claim ("sub" unless configured) is the decimal int64 user id, "aud" names
// this service, "iat" and "exp" are required and at most a capped lifetime
// apart, "iss" is checked when one is configured, and the admin role in the
// role claim ("role": "admin" unless configured) opens the admin routes.
//
// A Verifier has one key source and the algorithms that go with it, never
// both: NewVerifier takes a shared secret and accepts only HS256 (for local
// use, tests and the bench); NewJWKSVerifier takes an identity provider's
// JWKS URL and accepts only asymmetric algorithms (RS*, PS*, ES*, EdDSA)
// with the provider's public keys. Pinning the algorithms is what stops
// "alg": "none" and key confusion (a public key used as an HMAC secret); the
// library's own default would accept any algorithm the key fits. The
// audience stops a token minted for another service of the same issuer or
// secret; the lifetime cap stops a leaked token, or one minted by a careless
// script, from working for a year.
//
// It owns no stored state. A Verifier holds its key source (the secret, or the
// JWK Set's keys, refreshed from the provider) and a bounded cache of tokens
// it accepted, keyed by their SHA-256 (cache.go). Sign mints HS256 tokens for
// tests, the bench tool and pkg/devtoken.
//
// Importers: pkg/httpapi (every request's token), pkg/config/jwtconfig (to
// check a JWKS URL when the token settings are validated), pkg/devtoken and
// the bench tool (to sign). It imports no other package of the module: its
// settings arrive as arguments and Options, never from pkg/config (whose
// jwtconfig imports it),
// and it checks a token string, leaving the HTTP middleware to pkg/httpapi.
package auth
