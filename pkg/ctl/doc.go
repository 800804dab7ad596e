// Package ctl is flashsalectl, the operator CLI: every command but token
// talks to the ingress's admin API (GET/PUT/PATCH/POST /api/v1/admin/...),
// or, for queue transcript, its public transcript, never to MySQL, Redis or
// Kafka, so an operator needs a URL and an admin token, not the stores'
// credentials, and every change goes through the same validation, locks and
// warm-up as the API's.
//
// Exit codes (Main): 0 success; 1 the API answered an error (its code and
// message are printed) or a local refusal (token under a JWK Set); 2 a
// usage error (flags, arguments, no token); 3 the audit says not ok, or a
// queue transcript does not verify; 4 the server could not be reached or
// answered something that is not the API.
//
// It owns no stored state: only the commands, their flags and their output.
//
// Only flashsalectl's main imports it (and pkg/console's tests, which check
// the console's figures against Compute). It imports pkg/api for the audit
// report and waitlist types it prints, pkg/waitroom/draw to verify a transcript,
// pkg/histquantile and pkg/devtoken. It never imports a store client
// (pkg/store, pkg/stock, pkg/orderlog), pkg/audit or pkg/config, nor anything
// that links one: flashsalectl's test fails if the binary links go-redis or
// the MySQL driver.
package ctl
