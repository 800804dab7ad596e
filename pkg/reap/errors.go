package reap

import "errors"

// ErrSessionClock is returned by CheckClock when the MySQL session's NOW(3)
// is not UTC: deadlines are stored in UTC and judged by NOW(3), so such a
// session would cancel orders early or late by its offset.
var ErrSessionClock = errors.New("reap: MySQL session clock is not UTC")

// ErrUnknownDecision is returned for an arbiter decision this reaper does not
// know how to compensate in Redis (a newer writer's reason): the reservation
// is left alone and reported rather than guessed at.
var ErrUnknownDecision = errors.New("reap: unknown arbiter decision")
