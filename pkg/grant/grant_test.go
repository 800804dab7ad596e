package grant

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
	g := Sign(key, 7, 42, now.Add(30*time.Second))
	if exp, err := Verify(key, g, 7, 42, now); err != nil || !exp.Equal(now.Add(30*time.Second)) {
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
		{"another buyer", key, g, 7, 43, now, ErrInvalid},
		{"another item", key, g, 8, 42, now, ErrInvalid},
		{"another item's key", other, g, 7, 42, now, ErrInvalid},
		{"at expiry", key, g, 7, 42, now.Add(30 * time.Second), ErrExpired},
		{"after expiry", key, g, 7, 42, now.Add(time.Hour), ErrExpired},
		{"later expiry forged", key, strings.Replace(g, ".1800000030000.", ".1800000090000.", 1), 7, 42, now.Add(time.Minute), ErrInvalid},
		{"user swapped in the body", key, strings.Replace(g, ".42.", ".43.", 1), 7, 43, now, ErrInvalid},
		{"no mac", key, body, 7, 42, now, ErrInvalid},
		{"empty", key, "", 7, 42, now, ErrInvalid},
		{"not base64", key, g[:len(g)-2] + "!!", 7, 42, now, ErrInvalid},
		{"too long", key, g + strings.Repeat("A", MaxLen), 7, 42, now, ErrInvalid},
		{"mac of another user", key, strings.Replace(Sign(key, 7, 43, now.Add(time.Minute)), ".43.", ".42.", 1), 7, 42, now, ErrInvalid},
	}
	for _, c := range cases {
		if _, err := Verify(c.key, c.g, c.item, c.usr, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func FuzzVerifyNeverAcceptsWithoutTheKey(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	f.Add(Sign(key, 1, 1, time.UnixMilli(1<<50)))
	f.Add("g1.1.1.99999999999999.xx")
	f.Fuzz(func(t *testing.T, g string) {
		if g == Sign(key, 1, 1, time.UnixMilli(1<<50)) {
			return
		}
		if _, err := Verify(key, g, 1, 1, time.UnixMilli(0)); err == nil {
			t.Fatalf("accepted %q", g)
		}
	})
}

// An offer grant is told from an admission grant by its version, which the
// mac covers: rewriting one kind's version into the other's is refused.
func TestOfferGrantKindIsSigned(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.UnixMilli(1_800_000_000_000)
	o := SignOffer(key, 7, 42, now.Add(time.Minute))
	a := Sign(key, 7, 42, now.Add(time.Minute))
	if _, err := Verify(key, o, 7, 42, now); err != nil || !IsOffer(o) {
		t.Fatalf("offer grant: %v, IsOffer %v", err, IsOffer(o))
	}
	if _, err := Verify(key, a, 7, 42, now); err != nil || IsOffer(a) {
		t.Fatalf("admission grant: %v, IsOffer %v", err, IsOffer(a))
	}
	for name, g := range map[string]string{
		"admission made an offer": offerVersion + strings.TrimPrefix(a, version),
		"offer made an admission": version + strings.TrimPrefix(o, offerVersion),
		"another version":         "x1" + strings.TrimPrefix(o, offerVersion),
	} {
		if _, err := Verify(key, g, 7, 42, now); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
