// Package api holds the wire types of the ingress's HTTP API: the JSON
// shapes of the requests, responses and error codes it serves, as
// ingress/openapi.yaml describes them, so the server and its clients encode
// and decode one declaration of each.
//
// It owns the types and their JSON tags, nothing else: no handler, no
// computation, no client. So far it holds the audit report (audit.go: the
// Audit, AuditBucket and Waitlist schemas of the admin audit, live and queue
// views), the waiting room's answers (queue.go: Ticket, TicketStatus,
// AdminQueue, ReceiptKey), the dead-letter topic's (dlq.go) and the items
// as a buyer and an admin read them (items.go: Item, AdminItem,
// AdminItemDetail, ItemPage); the other shapes still sit beside their
// handlers and clients and move here as they are touched. A test holds each moved type to its schema
// in ingress/openapi.yaml, property for property, nested objects included.
//
// Importers: pkg/waitroom, whose Room answers with the queue's shapes;
// pkg/audit, which computes the audit report (its Report,
// BucketReport and Waitlist are aliases of these, so pkg/httpapi, pkg/auditor
// and the bench tool use them through it), and pkg/ctl, flashsalectl's
// commands, which decode and print them; pkg/httpapi, which answers with
// the items' and the dead letters' shapes (through pkg/dlq for the latter);
// the bench tool is to import it directly as its shapes move here.
//
// It imports nothing of the project, and must not: flashsalectl links it, and
// a client of the API has no business linking a store client (a test in
// flashsalectl fails if the binary links go-redis or the MySQL driver).
package api
