// Package dlq is the dead-letter topic as the admin API serves it: a page of
// letters (List), one letter with its payload and its request's decision
// (Get), a letter's original message published again to the orders topic
// (Replay), and how many the topic holds (Count, the live view's).
//
// It owns these operations, not the topic: the letters are written by the
// consumer (pkg/orderwriter), their headers and reads are the Kafka
// contract's (pkg/orderlog), a decision is the arbiter's row (pkg/store),
// and the answers' shapes are pkg/api's. The ingress's handlers
// (pkg/httpapi) only read the path and the query and turn its refusals
// (ErrUnavailable, ErrNoLetter, ErrNotPublished, NotReplayableError,
// OtherTopicError) into the contract's answers.
//
// Only pkg/httpapi imports it. It imports pkg/orderlog, pkg/store and
// pkg/api, never the HTTP layer or the consumer: a replay goes through the
// publisher it is handed, as an admitted order does.
package dlq
