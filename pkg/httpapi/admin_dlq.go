package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/dlq"
)

// The dead-letter list's page size: 50 unless limit says otherwise, at
// most 500 (a letter is read whole from Kafka to be listed).
const (
	defaultDLQLimit = 50
	maxDLQLimit     = 500
)

// letters is the dead-letter topic as this server reaches it (pkg/dlq),
// from its settings as they are now.
func (s *Server) letters() dlq.Letters {
	return dlq.Letters{Kafka: s.cfg.Kafka, Brokers: s.cfg.Brokers, DLQTopic: s.cfg.DLQTopic, OrdersTopic: s.cfg.Topic,
		Publisher: s.pub, DB: s.db, StoreTimeout: s.cfg.StoreTimeout, PublishTimeout: s.cfg.Ingress.PublishTimeout, Log: s.log}
}

// listDLQ is GET /api/v1/admin/dlq?limit=&before=&after=: the newest
// letters first (a page below before, when given), or with after the
// letters above it, oldest first (to follow the topic), below before when
// both are given (a range). The dead-letter topic has one partition, so an
// offset names a letter.
func (s *Server) listDLQ(c echo.Context) error {
	limit, err := queryInt(c, "limit", defaultDLQLimit, 1, maxDLQLimit, badRequest("invalid_limit", "limit must be an integer from 1 to 500"))
	if err != nil {
		return err
	}
	_, hasAfter := c.QueryParams()["after"]
	before, err := queryInt(c, "before", 1<<63-1, 0, 1<<63-1, badRequest("invalid_before", "before must be a dead-letter offset (a decimal integer >= 0)"))
	if err != nil {
		return err
	}
	after, err := queryInt(c, "after", -1, 0, 1<<63-2, badRequest("invalid_after", "after must be a dead-letter offset (a decimal integer >= 0)"))
	if err != nil {
		return err
	}
	page, err := s.letters().List(c.Request().Context(), dlq.Page{Limit: limit, Before: before, After: after, HasAfter: hasAfter})
	if err != nil {
		return dlqError(err)
	}
	return c.JSON(http.StatusOK, page)
}

// dlqOffset parses the {offset} of a letter's path.
func dlqOffset(c echo.Context) (int64, error) {
	v := c.Param("offset")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
		return 0, badRequest("invalid_offset", "offset must be a dead-letter offset (a decimal integer >= 0)")
	}
	return n, nil
}

// getDLQ is GET /api/v1/admin/dlq/{offset}: one letter, its payload, and
// whether a replay could do anything.
func (s *Server) getDLQ(c echo.Context) error { return onLetter(c, s.letters().Get) }

// replayDLQ is POST /api/v1/admin/dlq/{offset}/replay: the original
// message published again to the orders topic (dlq.Letters.Replay), which
// the consumer decides on its idempotent path, so replaying twice changes
// nothing.
func (s *Server) replayDLQ(c echo.Context) error { return onLetter(c, s.letters().Replay) }

// onLetter answers a request on the letter at the path's offset: the offset
// checked (dlqOffset), then op's answer as 200, or its refusal as dlqError
// maps it. GET and the replay differ only in op.
func onLetter[T any](c echo.Context, op func(context.Context, int64) (T, error)) error {
	off, err := dlqOffset(c)
	if err != nil {
		return err
	}
	v, err := op(c.Request().Context(), off)
	if err != nil {
		return dlqError(err)
	}
	return c.JSON(http.StatusOK, v)
}

// dlqError is the contract's answer to a refusal of pkg/dlq.
func dlqError(err error) error {
	var bad *dlq.NotReplayableError
	var other *dlq.OtherTopicError
	switch {
	case errors.Is(err, dlq.ErrNoLetter):
		return notFound("no dead letter at that offset")
	case errors.As(err, &bad):
		return newErr(http.StatusConflict, "not_replayable", "the payload does not decode as an order message ("+bad.Err.Error()+
			"): a replay would only be dead-lettered again")
	case errors.As(err, &other):
		return newErr(http.StatusConflict, "other_topic", "the letter was consumed from "+strconv.Quote(other.Topic)+
			", not this ingress's orders topic "+strconv.Quote(other.OrdersTopic))
	case errors.Is(err, dlq.ErrNotPublished):
		return unavailable("kafka unavailable; the letter may or may not have been replayed (a second replay is harmless)")
	case errors.Is(err, dlq.ErrUnavailable):
		return unavailable("kafka unavailable")
	}
	return err
}
