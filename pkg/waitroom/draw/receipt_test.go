package draw_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

func testKey(b byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b + byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func TestReceiptRoundTrip(t *testing.T) {
	priv := testKey(0x20)
	pub := priv.Public().(ed25519.PublicKey)
	for _, rc := range []draw.Receipt{
		{Item: 42, Ticket: draw.Hash("a"), Arrival: 1, TakenAt: time.Date(2026, 12, 24, 9, 59, 58, 125e6, time.UTC)},
		{Item: 1<<63 - 1, Ticket: draw.Hash("b"), Arrival: 1<<63 - 1, TakenAt: time.UnixMilli(1<<63 - 1).UTC()},
		{Item: -1, Ticket: draw.Hash("c"), Arrival: 0, TakenAt: time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)},
		{Item: 7, Ticket: draw.Hash("d"), Arrival: 3, TakenAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))},
	} {
		s, err := draw.SignReceipt(priv, rc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := draw.VerifyReceipt(pub, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want := rc
		want.TakenAt = rc.TakenAt.UTC()
		if got != want {
			t.Fatalf("receipt %+v came back as %+v", want, got)
		}
		parsed, sig, err := draw.ParseReceipt(s)
		if err != nil || parsed != got || len(sig) != ed25519.SignatureSize {
			t.Fatalf("ParseReceipt: %+v, %d-byte signature, %v", parsed, len(sig), err)
		}
	}
	// The time is signed to the millisecond.
	rc := draw.Receipt{Item: 1, Ticket: draw.Hash("e"), Arrival: 1, TakenAt: time.Unix(100, 123456789)}
	s, _ := draw.SignReceipt(priv, rc)
	got, err := draw.VerifyReceipt(pub, s)
	if err != nil || !got.TakenAt.Equal(time.UnixMilli(100123)) {
		t.Fatalf("sub-millisecond time: %v, %v", got.TakenAt, err)
	}
}

func TestTamperedReceiptFails(t *testing.T) {
	priv := testKey(0x20)
	pub := priv.Public().(ed25519.PublicKey)
	rc := draw.Receipt{Item: 42, Ticket: draw.Hash("a"), Arrival: 4, TakenAt: time.UnixMilli(1798106400250)}
	s, err := draw.SignReceipt(priv, rc)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(s, ".")
	enc := base64.RawURLEncoding
	payload, _ := enc.DecodeString(parts[1])
	sig, _ := enc.DecodeString(parts[2])
	// withPayload re-encodes the receipt with payload byte i changed, the
	// signature kept.
	withPayload := func(i int) string {
		p := append([]byte(nil), payload...)
		p[i] ^= 0x01
		return parts[0] + "." + enc.EncodeToString(p) + "." + parts[2]
	}
	withSig := func(i int) string {
		g := append([]byte(nil), sig...)
		g[i] ^= 0x80
		return parts[0] + "." + parts[1] + "." + enc.EncodeToString(g)
	}
	// The non-canonical form is the same bytes to a lax decoder: only the
	// strict one refuses it, so one receipt has one string.
	if lax, err := enc.DecodeString(nonCanonical(parts[1])); err != nil || string(lax) != string(payload) {
		t.Fatalf("the non-canonical payload decodes laxly to other bytes (%v)", err)
	}
	other := testKey(0x40).Public().(ed25519.PublicKey)
	cases := []struct {
		name string
		pub  ed25519.PublicKey
		s    string
		want error
	}{
		{"item changed", pub, withPayload(7), draw.ErrSignature},
		{"ticket changed", pub, withPayload(8 + 31), draw.ErrSignature},
		{"arrival changed", pub, withPayload(8 + 32 + 7), draw.ErrSignature},
		{"taken_at changed", pub, withPayload(8 + 32 + 8 + 7), draw.ErrSignature},
		{"signature changed (R)", pub, withSig(0), draw.ErrSignature},
		{"signature changed (S)", pub, withSig(40), draw.ErrSignature},
		{"signed by another key", other, s, draw.ErrSignature},
		{"a key that is not Ed25519", pub[:31], s, draw.ErrSignature},
		{"another version", pub, "r2" + s[2:], draw.ErrReceipt},
		{"no prefix", pub, s[3:], draw.ErrReceipt},
		{"a part more", pub, s + ".x", draw.ErrReceipt},
		{"padded", pub, parts[0] + "." + parts[1] + "=." + parts[2], draw.ErrReceipt},
		{"standard base64", pub, parts[0] + "." + base64.RawStdEncoding.EncodeToString(payloadWith(payload, '+')) + "." + parts[2], draw.ErrReceipt},
		{"non-canonical last character", pub, parts[0] + "." + nonCanonical(parts[1]) + "." + parts[2], draw.ErrReceipt},
		{"payload short", pub, parts[0] + "." + enc.EncodeToString(payload[:55]) + "." + parts[2], draw.ErrReceipt},
		{"signature short", pub, parts[0] + "." + parts[1] + "." + enc.EncodeToString(sig[:63]), draw.ErrReceipt},
		{"empty", pub, "", draw.ErrReceipt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := draw.VerifyReceipt(c.pub, c.s); !errors.Is(err, c.want) {
				t.Fatalf("VerifyReceipt(%q) = %v, want %v", c.s, err, c.want)
			}
		})
	}
	if _, err := draw.VerifyReceipt(pub, s); err != nil {
		t.Fatalf("the untouched receipt: %v", err)
	}
}

// payloadWith is payload changed so that its standard base64 holds c ('+' or
// '/'), which base64url does not use.
func payloadWith(payload []byte, c byte) []byte {
	p := append([]byte(nil), payload...)
	for i := 0; ; i++ {
		p[0] = byte(i)
		p[1] = byte(i * 7)
		if strings.IndexByte(base64.RawStdEncoding.EncodeToString(p), c) >= 0 {
			return p
		}
	}
}

// nonCanonical changes the last character of an unpadded base64url string of
// 56 bytes (75 characters: the last holds 4 bits and 2 unused ones) so that
// the unused bits are set: a lax decoder reads the same bytes.
func nonCanonical(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[last|0x01])
}

func TestSignReceiptRefuses(t *testing.T) {
	priv := testKey(0x20)
	for name, h := range map[string]string{
		"upper-case hash": strings.ToUpper(draw.Hash("a")),
		"short hash":      draw.Hash("a")[:62],
		"a ticket id":     "00112233445566778899aabbccddeeff",
	} {
		if _, err := draw.SignReceipt(priv, draw.Receipt{Item: 1, Ticket: h, Arrival: 1}); !errors.Is(err, draw.ErrReceipt) {
			t.Errorf("%s: %v, want ErrReceipt", name, err)
		}
	}
	if _, err := draw.SignReceipt(priv[:32], draw.Receipt{Item: 1, Ticket: draw.Hash("a"), Arrival: 1}); !errors.Is(err, draw.ErrSignature) {
		t.Errorf("a short private key: %v, want ErrSignature", err)
	}
}

func TestKeyID(t *testing.T) {
	pub := testKey(0x20).Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	if got, want := draw.KeyID(pub), hex.EncodeToString(sum[:8]); got != want || len(got) != 16 {
		t.Fatalf("KeyID = %s, want %s", got, want)
	}
	if draw.KeyID(pub) == draw.KeyID(testKey(0x40).Public().(ed25519.PublicKey)) {
		t.Fatal("two keys, one id")
	}
}
