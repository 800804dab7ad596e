package httpapi

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config"
)

// TestTokenPolicyConfigured: the server checks the configured audience,
// issuer and lifetime cap, not only pkg/auth's defaults.
func TestTokenPolicyConfigured(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) {
		in.JWTAudience, in.JWTIssuer, in.JWTMaxTTL = "shop-eu", "https://id.example", 2*time.Hour
	}})
	item := testenv.ItemID()
	policy := []auth.Option{auth.WithAudience("shop-eu"), auth.WithIssuer("https://id.example"), auth.WithMaxTTL(2 * time.Hour)}
	mint := func(user int64, role string, ttl time.Duration, opts ...auth.Option) map[string]string {
		tok, err := auth.Sign(testSecret, user, role, ttl, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"Authorization": "Bearer " + tok}
	}
	body := fmt.Sprintf(`{"name":"x","price_cents":1,"stock":5,"per_user_limit":1,"starts_at":%q,"ends_at":%q}`,
		time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", item), body, mint(1, auth.RoleAdmin, time.Hour, policy...)); r.Code != http.StatusOK {
		t.Fatalf("put item with a token of the policy: %d %s", r.Code, r.Body)
	}
	order := fmt.Sprintf(`{"item_id":%d,"qty":1}`, item)
	for name, hdr := range map[string]map[string]string{
		"default audience": mint(2, "", time.Hour),
		"wrong issuer":     mint(2, "", time.Hour, auth.WithAudience("shop-eu"), auth.WithIssuer("https://evil.example")),
		"over the cap":     mint(2, "", 3*time.Hour, auth.WithAudience("shop-eu"), auth.WithIssuer("https://id.example"), auth.WithMaxTTL(3*time.Hour)),
	} {
		if r := h.do(http.MethodPost, "/api/v1/orders", order, hdr); r.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", name, r.Code, r.Body)
		}
	}
	if r := h.do(http.MethodPost, "/api/v1/orders", order, mint(2, "", time.Hour, policy...)); r.Code != http.StatusAccepted {
		t.Fatalf("order with a token of the policy: %d %s", r.Code, r.Body)
	}
}
