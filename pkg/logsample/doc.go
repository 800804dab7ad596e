// Package logsample bounds how many lines a repeated warning costs. During
// an outage at sale rates every failed request logs the same WARN line:
// thousands of lines per second per replica, which fill disks, slow the
// log pipeline and bury the first line that said what went wrong. The
// Handler lets the first Burst lines of each message through in every
// Window and counts the rest; when the window ends it writes one line per
// message that lost lines, saying how many ("suppressed"), so nothing is
// dropped without a count. Lines below MinLevel (info, debug) always pass:
// they are not written per request.
//
// The key is the level and the message, not the attributes: the messages
// are constants in the code, so the set of keys is small, and a storm of
// "request failed" lines differing only in their duration is one storm.
//
// It owns the per-message counts of the current window and no other state.
// Only pkg/ops imports it: NewLogger puts it in front of every deployable's
// JSON handler when FLASHSALE_LOG_BURST is above 0. It imports no other
// package of the module, so it can sit under every logger.
package logsample
