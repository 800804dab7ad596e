package waitroom

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestGrantBindsItemUserAndExpiry(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	other := []byte("fedcba9876543210fedcba9876543210")
	now := time.UnixMilli(1_800_000_000_000)
	g := SignGrant(key, 7, 42, now.Add(30*time.Second))
	if exp, err := VerifyGrant(key, g, 7, 42, now); err != nil || !exp.Equal(now.Add(30*time.Second)) {
		t.Fatalf("own grant: %v, %v", exp, err)
	}
	body, _, _ := strings.Cut(g, ".")
	cases := []struct {
		name      string
		key       []byte
		g         string
		item, usr int64
		at        time.Time
		want      error
	}{
		{"another buyer", key, g, 7, 43, now, ErrGrantInvalid},
		{"another item", key, g, 8, 42, now, ErrGrantInvalid},
		{"another item's key", other, g, 7, 42, now, ErrGrantInvalid},
		{"at expiry", key, g, 7, 42, now.Add(30 * time.Second), ErrGrantExpired},
		{"after expiry", key, g, 7, 42, now.Add(time.Hour), ErrGrantExpired},
		{"later expiry forged", key, strings.Replace(g, ".1800000030000.", ".1800000090000.", 1), 7, 42, now.Add(time.Minute), ErrGrantInvalid},
		{"user swapped in the body", key, strings.Replace(g, ".42.", ".43.", 1), 7, 43, now, ErrGrantInvalid},
		{"no mac", key, body, 7, 42, now, ErrGrantInvalid},
		{"empty", key, "", 7, 42, now, ErrGrantInvalid},
		{"not base64", key, g[:len(g)-2] + "!!", 7, 42, now, ErrGrantInvalid},
		{"too long", key, g + strings.Repeat("A", GrantMaxLen), 7, 42, now, ErrGrantInvalid},
		{"mac of another user", key, strings.Replace(SignGrant(key, 7, 43, now.Add(time.Minute)), ".43.", ".42.", 1), 7, 42, now, ErrGrantInvalid},
	}
	for _, c := range cases {
		if _, err := VerifyGrant(c.key, c.g, c.item, c.usr, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func FuzzVerifyGrantNeverAcceptsWithoutTheKey(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	f.Add(SignGrant(key, 1, 1, time.UnixMilli(1<<50)))
	f.Add("g1.1.1.99999999999999.xx")
	f.Fuzz(func(t *testing.T, g string) {
		if g == SignGrant(key, 1, 1, time.UnixMilli(1<<50)) {
			return
		}
		if _, err := VerifyGrant(key, g, 1, 1, time.UnixMilli(0)); err == nil {
			t.Fatalf("accepted %q", g)
		}
	})
}

// An offer grant is told from an admission grant by its grantVersion, which the
// mac covers: rewriting one kind's grantVersion into the other's is refused.
func TestOfferGrantKindIsSigned(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.UnixMilli(1_800_000_000_000)
	o := SignOfferGrant(key, 7, 42, now.Add(time.Minute))
	a := SignGrant(key, 7, 42, now.Add(time.Minute))
	if _, err := VerifyGrant(key, o, 7, 42, now); err != nil || !IsOfferGrant(o) {
		t.Fatalf("offer grant: %v, IsOffer %v", err, IsOfferGrant(o))
	}
	if _, err := VerifyGrant(key, a, 7, 42, now); err != nil || IsOfferGrant(a) {
		t.Fatalf("admission grant: %v, IsOffer %v", err, IsOfferGrant(a))
	}
	for name, g := range map[string]string{
		"admission made an offer": offerGrantVersion + strings.TrimPrefix(a, grantVersion),
		"offer made an admission": grantVersion + strings.TrimPrefix(o, offerGrantVersion),
		"another grantVersion":    "x1" + strings.TrimPrefix(o, offerGrantVersion),
	} {
		if _, err := VerifyGrant(key, g, 7, 42, now); !errors.Is(err, ErrGrantInvalid) {
			t.Errorf("%s: %v, want ErrGrantInvalid", name, err)
		}
	}
}
