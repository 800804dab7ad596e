// Package console is the live sale console: one HTML page (assets/, embedded
// at build time, so nothing is fetched from a CDN or anywhere else) that the
// ingress serves at Path. The page is a shell that holds no data: it asks
// the operator for an admin token, keeps it in the tab's sessionStorage and
// reads everything from the admin API (GET /api/v1/admin/items, .../live,
// .../queue for a sale with a waiting room, POST .../end) with
// Authorization: Bearer. So the page itself needs no
// authentication, and a token that is not an admin's draws nothing.
//
// It owns the page's assets and the Content-Security-Policy it is served with
// (only the inlined script and style run, and they may call only this origin);
// no state and no store.
//
// Only pkg/httpapi imports it, to serve the page. It imports nothing but the
// standard library, and never the admin API's Go packages: the page speaks to
// the API over HTTP like any other client, so it can show nothing the API
// would not give that token.
package console
