package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The dead-letter list's page size: 50 unless limit says otherwise, at
// most 500 (a letter is read whole from Kafka to be listed).
const (
	defaultDLQLimit = 50
	maxDLQLimit     = 500
)

func toDLQLetter(l orderlog.DeadLetter) api.DeadLetter {
	failed := l.FailedAt
	if failed.IsZero() {
		failed = l.Time
	}
	return api.DeadLetter{Offset: l.Offset, AppendedAt: l.Time, FailedAt: failed, Reason: l.Reason, Key: string(l.Key),
		RequestID: l.RequestID(), Source: api.DeadLetterSource{Topic: l.Topic, Partition: l.Partition, Offset: l.SourceOffset}, Size: len(l.Value)}
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
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*s.cfg.StoreTimeout)
	defer cancel()
	b, err := s.cfg.Kafka.DeadLetterBounds(ctx, s.cfg.Brokers, s.cfg.DLQTopic)
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "admin: dlq bounds", "err", err)
		return unavailable("kafka unavailable")
	}
	page := api.DeadLetterPage{FirstOffset: b.First, EndOffset: b.End, Letters: []api.DeadLetter{}}
	var lo, hi int64
	top := min(before, b.End)
	if hasAfter {
		lo = max(after+1, b.First)
		hi = min(lo+limit, top)
	} else {
		hi = min(before, b.End)
		lo = max(b.First, hi-limit)
	}
	if lo < hi {
		ls, err := s.cfg.Kafka.ReadDeadLetters(ctx, s.cfg.Brokers, s.cfg.DLQTopic, lo, hi)
		if err != nil {
			s.log.WarnContext(c.Request().Context(), "admin: dlq read", "err", err)
			return unavailable("kafka unavailable")
		}
		for _, l := range ls {
			page.Letters = append(page.Letters, toDLQLetter(l))
		}
		if hasAfter {
			if hi < top {
				next := hi - 1
				page.NextAfter = &next
			}
		} else {
			slices.Reverse(page.Letters)
			if lo > b.First {
				page.NextBefore = &lo
			}
		}
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

// readLetter reads the letter of the path's offset: 404 when the topic does
// not hold it (an offset at or past its end, or deleted by retention).
func (s *Server) readLetter(c echo.Context) (orderlog.DeadLetter, error) {
	off, err := dlqOffset(c)
	if err != nil {
		return orderlog.DeadLetter{}, err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*s.cfg.StoreTimeout)
	defer cancel()
	b, err := s.cfg.Kafka.DeadLetterBounds(ctx, s.cfg.Brokers, s.cfg.DLQTopic)
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "admin: dlq bounds", "err", err)
		return orderlog.DeadLetter{}, unavailable("kafka unavailable")
	}
	if off < b.First || off >= b.End {
		return orderlog.DeadLetter{}, notFound("no dead letter at that offset")
	}
	l, err := s.cfg.Kafka.ReadDeadLetter(ctx, s.cfg.Brokers, s.cfg.DLQTopic, off)
	if errors.Is(err, orderlog.ErrNoLetter) {
		return l, notFound("no dead letter at that offset")
	}
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "admin: dlq read", "offset", off, "err", err)
		return l, unavailable("kafka unavailable")
	}
	return l, nil
}

// decisionOf is the arbiter's decision of requestID, nil when undecided or
// unreadable (it only informs; the consumer decides).
func (s *Server) decisionOf(ctx context.Context, requestID string) *api.DeadLetterDecision {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	d, err := store.GetDecision(ctx, s.db, requestID)
	if err != nil {
		return nil
	}
	return &api.DeadLetterDecision{Outcome: string(d.Outcome), Reason: d.Reason, DecidedAt: d.DecidedAt.UTC()}
}

// getDLQ is GET /api/v1/admin/dlq/{offset}: one letter, its payload, and
// whether a replay could do anything.
func (s *Server) getDLQ(c echo.Context) error {
	l, err := s.readLetter(c)
	if err != nil {
		return err
	}
	d := api.DeadLetterDetail{DeadLetter: toDLQLetter(l), Headers: []api.DeadLetterHeader{}, PayloadEncoding: "utf-8", Payload: string(l.Value)}
	if !utf8.Valid(l.Value) {
		d.PayloadEncoding, d.Payload = "base64", base64.StdEncoding.EncodeToString(l.Value)
	}
	for _, h := range l.Headers {
		d.Headers = append(d.Headers, api.DeadLetterHeader{Key: h.Key, Value: string(h.Value)})
	}
	m, err := orderlog.Decode(l.Value)
	d.Replayable = err == nil
	if err != nil {
		d.DecodeError = err.Error()
	} else {
		d.Decision = s.decisionOf(c.Request().Context(), m.RequestID)
	}
	return c.JSON(http.StatusOK, d)
}

// replayDLQ is POST /api/v1/admin/dlq/{offset}/replay: the original
// message (key, value, headers) published again to the orders topic by the
// admission path's own publisher, acknowledged as an order is, so the
// consumer decides it on its idempotent path: a request the arbiter has
// decided (REJECTED unprocessable by the give-up, VOIDED by the reaper, or
// ORDERED by an earlier replay) is dropped there, an undecided one is
// written once. Replaying twice therefore changes nothing. A payload this
// ingress cannot decode is refused (409 not_replayable): the consumer
// would only dead-letter it again.
func (s *Server) replayDLQ(c echo.Context) error {
	l, err := s.readLetter(c)
	if err != nil {
		return err
	}
	m, err := orderlog.Decode(l.Value)
	if err != nil {
		return newErr(http.StatusConflict, "not_replayable", "the payload does not decode as an order message ("+err.Error()+
			"): a replay would only be dead-lettered again")
	}
	if l.Topic != "" && l.Topic != s.cfg.Topic {
		return newErr(http.StatusConflict, "other_topic", "the letter was consumed from "+strconv.Quote(l.Topic)+
			", not this ingress's orders topic "+strconv.Quote(s.cfg.Topic))
	}
	before := s.decisionOf(c.Request().Context(), m.RequestID)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), s.cfg.Ingress.PublishTimeout)
	err = s.pub.WriteMessages(pctx, l.Message())
	cancel()
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "admin: dlq replay publish failed", "offset", l.Offset, "request_id", m.RequestID, "err", err)
		return unavailable("kafka unavailable; the letter may or may not have been replayed (a second replay is harmless)")
	}
	s.log.InfoContext(c.Request().Context(), "dead letter replayed", "offset", l.Offset, "request_id", m.RequestID, "topic", s.cfg.Topic)
	return c.JSON(http.StatusOK, api.DeadLetterReplay{Offset: l.Offset, RequestID: m.RequestID, Topic: s.cfg.Topic, Decision: before})
}
