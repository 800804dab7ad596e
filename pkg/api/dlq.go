package api

import "time"

// DeadLetterSource is where a dead letter was consumed from (its
// flashsale-original-* headers); absent parts are -1 or "".
type DeadLetterSource struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
}

// DeadLetter is one letter of the dead-letter topic in a list (schema
// DeadLetter, GET /api/v1/admin/dlq).
type DeadLetter struct {
	Offset     int64     `json:"offset"`
	AppendedAt time.Time `json:"appended_at"`
	// FailedAt is when the consumer gave up on it; AppendedAt when a
	// letter lacks the header.
	FailedAt  time.Time        `json:"failed_at"`
	Reason    string           `json:"reason"`
	Key       string           `json:"key"`
	RequestID string           `json:"request_id,omitempty"`
	Source    DeadLetterSource `json:"source"`
	Size      int              `json:"size"`
}

// DeadLetterHeader is one Kafka header of a letter.
type DeadLetterHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// DeadLetterDecision is the arbiter's decision of a letter's request
// (schema DeadLetterDecision).
type DeadLetterDecision struct {
	Outcome   string    `json:"outcome"`
	Reason    string    `json:"reason,omitempty"`
	DecidedAt time.Time `json:"decided_at"`
}

// DeadLetterDetail is one letter with its payload (schema
// DeadLetterDetail, GET /api/v1/admin/dlq/{offset}).
type DeadLetterDetail struct {
	DeadLetter
	// Payload is the original message's value: its text when it is UTF-8
	// (an order message is JSON), else base64 (PayloadEncoding says which).
	Payload         string             `json:"payload"`
	PayloadEncoding string             `json:"payload_encoding"`
	Headers         []DeadLetterHeader `json:"headers"`
	// Replayable is whether the ingress decodes the payload as an order
	// message; DecodeError says why not. A letter that does not decode
	// would only be dead-lettered again, so a replay refuses it.
	Replayable  bool   `json:"replayable"`
	DecodeError string `json:"decode_error,omitempty"`
	// Decision is the arbiter's decision of the request, when it has one
	// (absent: undecided, or MySQL unavailable).
	Decision *DeadLetterDecision `json:"decision,omitempty"`
}

// DeadLetterPage is a page of letters (schema DeadLetterPage).
type DeadLetterPage struct {
	FirstOffset int64        `json:"first_offset"`
	EndOffset   int64        `json:"end_offset"`
	Letters     []DeadLetter `json:"letters"`
	NextBefore  *int64       `json:"next_before,omitempty"`
	NextAfter   *int64       `json:"next_after,omitempty"`
}

// DeadLetterReplay is the answer of a replay (schema DeadLetterReplay,
// POST /api/v1/admin/dlq/{offset}/replay).
type DeadLetterReplay struct {
	Offset    int64  `json:"offset"`
	RequestID string `json:"request_id"`
	Topic     string `json:"topic"`
	// Decision is the request's decision before the replay, if it had one:
	// then the consumer drops the replayed message (its idempotent path).
	Decision *DeadLetterDecision `json:"decision,omitempty"`
}
