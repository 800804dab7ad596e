// Package rowcache keeps MySQL rows read by id in memory for a short TTL,
// one load per id shared by every concurrent caller and the ids MySQL does
// not have remembered too (internal/negcache), so a page everyone refreshes
// at once, or a client hammering an unknown id, costs MySQL one query per
// id and TTL.
//
// Its users are the ingress's read caches of items: the buyers' item cache
// (pkg/httpapi) and the waiting room's item view (pkg/waitroom). It owns no
// query: the caller hands Load the read. It imports internal/negcache
// alone of the module, and must never import a store or a feature, so any
// package may use it.
package rowcache
