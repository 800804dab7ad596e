// Package devtoken mints the bearer tokens of a local set-up: HS256, signed
// with the stack's own FLASHSALE_JWT_SECRET and carrying exactly the claims
// the ingress checks (FLASHSALE_JWT_AUDIENCE, _ISSUER, _MAX_TTL,
// _USER_CLAIM, _ROLE_CLAIM, _ADMIN_ROLE), so a token the ingress would refuse
// cannot be minted by mistake. flashsalectl token and fuzzprep token (the
// API contract run) both call it: one place knows how a local token is made.
//
// It is a command-line helper on purpose, never an API route: whoever can
// call a minting route can make themselves admin, so the ingress only ever
// verifies tokens. With a JWK Set (FLASHSALE_JWT_JWKS_URL) tokens are the
// identity provider's to issue, and Mint refuses.
//
// It owns no state: it reads the ingress's token settings
// (pkg/config/jwtconfig, the part of pkg/config that links no store driver,
// so flashsalectl does not link one through it) and signs with pkg/auth.
//
// Importers: pkg/ctl (flashsalectl token) and internal/fuzzprep. It is never
// imported by pkg/httpapi or any package the ingress links, and must not be,
// for the reason above.
package devtoken
