package grant

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid is a grant that is malformed, forged, or another buyer's or
// item's; ErrExpired a genuine one past its expiry.
var (
	ErrInvalid = errors.New("grant: invalid admission grant")
	ErrExpired = errors.New("grant: admission grant expired")
)

// MaxLen bounds a grant's length: longer input is refused before parsing.
const MaxLen = 200

const (
	version      = "g1"
	offerVersion = "w1"
)

// Sign returns the grant of user for item under key, valid until expires.
func Sign(key []byte, item, user int64, expires time.Time) string {
	return sign(key, version, item, user, expires)
}

// SignOffer returns the offer grant of user for item under key: user holds
// a waitlist offer of item until expires.
func SignOffer(key []byte, item, user int64, expires time.Time) string {
	return sign(key, offerVersion, item, user, expires)
}

// IsOffer reports whether g, a grant Verify accepted, is an offer grant.
func IsOffer(g string) bool { return strings.HasPrefix(g, offerVersion+".") }

func sign(key []byte, v string, item, user int64, expires time.Time) string {
	body := fmt.Sprintf("%s.%d.%d.%d", v, item, user, expires.UnixMilli())
	return body + "." + base64.RawURLEncoding.EncodeToString(mac(key, body))
}

// Verify checks that g is a grant (of either kind) under key of user for
// item, unexpired at now, and returns its expiry. Errors: ErrInvalid, ErrExpired.
func Verify(key []byte, g string, item, user int64, now time.Time) (time.Time, error) {
	if len(g) > MaxLen {
		return time.Time{}, ErrInvalid
	}
	i := strings.LastIndexByte(g, '.')
	if i < 0 {
		return time.Time{}, ErrInvalid
	}
	body, sum := g[:i], g[i+1:]
	// Compared as text, not decoded: base64 decoders skip newlines and
	// ignore a last character's spare bits, so several strings decode to
	// one mac, and a grant must have one spelling (the fuzz test found both).
	if !hmac.Equal([]byte(sum), []byte(base64.RawURLEncoding.EncodeToString(mac(key, body)))) {
		return time.Time{}, ErrInvalid
	}
	parts := strings.Split(body, ".")
	if len(parts) != 4 || (parts[0] != version && parts[0] != offerVersion) || parts[1] != strconv.FormatInt(item, 10) || parts[2] != strconv.FormatInt(user, 10) {
		return time.Time{}, ErrInvalid
	}
	ms, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return time.Time{}, ErrInvalid
	}
	exp := time.UnixMilli(ms)
	if !now.Before(exp) {
		return exp, ErrExpired
	}
	return exp, nil
}

func mac(key []byte, body string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(body))
	return h.Sum(nil)
}
