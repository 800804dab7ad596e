// Package jwtconfig is the part of pkg/config that declares the bearer
// tokens' settings (FLASHSALE_JWT_*): the JWT struct config.Ingress embeds,
// its flags, defaults and validation, and FromEnv, which reads them from the
// environment as the ingress does. It is a package of its own so that
// pkg/devtoken, and with it flashsalectl token, reads the token settings
// without linking pkg/config's store drivers (the MySQL driver, for DSNs):
// the settings are still declared once, here, and read with config's own
// environment reading (pkg/config/internal/envflag).
//
// It owns no state. Importers: pkg/config (Ingress embeds JWT) and
// pkg/devtoken. It imports pkg/auth (to check a JWK Set URL) and
// pkg/config/internal/envflag, nothing else of the module: never pkg/config
// itself, nor a store client.
package jwtconfig
