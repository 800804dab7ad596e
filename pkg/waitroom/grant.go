package waitroom

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

// ErrGrantInvalid is a grant that is malformed, forged, or another buyer's or
// item's; ErrGrantExpired a genuine one past its expiry.
var (
	ErrGrantInvalid = errors.New("grant: invalid admission grant")
	ErrGrantExpired = errors.New("grant: admission grant expired")
)

// GrantMaxLen bounds a grant's length: longer input is refused before parsing.
const GrantMaxLen = 200

const (
	grantVersion      = "g1"
	offerGrantVersion = "w1"
)

// Sign returns the grant of user for item under key, valid until expires.
func SignGrant(key []byte, item, user int64, expires time.Time) string {
	return signGrant(key, grantVersion, item, user, expires)
}

// SignOffer returns the offer grant of user for item under key: user holds
// a waitlist offer of item until expires.
func SignOfferGrant(key []byte, item, user int64, expires time.Time) string {
	return signGrant(key, offerGrantVersion, item, user, expires)
}

// IsOffer reports whether g, a grant Verify accepted, is an offer grant.
func IsOfferGrant(g string) bool { return strings.HasPrefix(g, offerGrantVersion+".") }

func signGrant(key []byte, v string, item, user int64, expires time.Time) string {
	body := fmt.Sprintf("%s.%d.%d.%d", v, item, user, expires.UnixMilli())
	return body + "." + base64.RawURLEncoding.EncodeToString(grantMAC(key, body))
}

// Verify checks that g is a grant (of either kind) under key of user for
// item, unexpired at now, and returns its expiry. Errors: ErrGrantInvalid, ErrGrantExpired.
func VerifyGrant(key []byte, g string, item, user int64, now time.Time) (time.Time, error) {
	if len(g) > GrantMaxLen {
		return time.Time{}, ErrGrantInvalid
	}
	i := strings.LastIndexByte(g, '.')
	if i < 0 {
		return time.Time{}, ErrGrantInvalid
	}
	body, sum := g[:i], g[i+1:]
	// Compared as text, not decoded: base64 decoders skip newlines and
	// ignore a last character's spare bits, so several strings decode to
	// one mac, and a grant must have one spelling (the fuzz test found both).
	if !hmac.Equal([]byte(sum), []byte(base64.RawURLEncoding.EncodeToString(grantMAC(key, body)))) {
		return time.Time{}, ErrGrantInvalid
	}
	parts := strings.Split(body, ".")
	if len(parts) != 4 || (parts[0] != grantVersion && parts[0] != offerGrantVersion) || parts[1] != strconv.FormatInt(item, 10) || parts[2] != strconv.FormatInt(user, 10) {
		return time.Time{}, ErrGrantInvalid
	}
	ms, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return time.Time{}, ErrGrantInvalid
	}
	exp := time.UnixMilli(ms)
	if !now.Before(exp) {
		return exp, ErrGrantExpired
	}
	return exp, nil
}

func grantMAC(key []byte, body string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(body))
	return h.Sum(nil)
}
