package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// validItemFields is a PUT body's fields, each as JSON: a valid item on
// sale now (the window does not matter to the cases below).
func validItemFields() map[string]string {
	return map[string]string{
		"name": `"strict"`, "price_cents": `100`, "stock": `5`, "per_user_limit": `1`,
		"starts_at": `"2020-01-01T00:00:00Z"`, "ends_at": `"2999-12-31T00:00:00Z"`, "buckets": `1`,
	}
}

func itemJSON(fields map[string]string) string {
	parts := make([]string, 0, len(fields))
	for k, v := range fields {
		parts = append(parts, fmt.Sprintf("%q:%s", k, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestPutItemStrictTypes: PUT is as strict as ItemInput in
// ingress/openapi.yaml: no field may be null (the schema says integer,
// string; none is nullable) or of another JSON type. An outside Schemathesis
// run had "buckets": null accepted (200) because the decoder turns null into
// "not sent", and buckets is optional. Each refusal is a 400 JSON error that
// names the field, and nothing is created.
func TestPutItemStrictTypes(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	wrong := map[string][]string{
		"name":           {`null`, `5`, `true`, `["x"]`, `{}`},
		"price_cents":    {`null`, `"100"`, `1.5`, `true`, `[]`},
		"stock":          {`null`, `"5"`, `5.5`, `false`, `{}`},
		"per_user_limit": {`null`, `"1"`, `1.0`, `true`},
		"starts_at":      {`null`, `0`, `true`, `[]`},
		"ends_at":        {`null`, `1`, `{}`},
		"buckets":        {`null`, `"1"`, `1.5`, `true`, `[]`, `{}`},
	}
	for field, values := range wrong {
		for _, v := range values {
			item := testenv.ItemID()
			f := validItemFields()
			f[field] = v
			r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", item), itemJSON(f), h.admin())
			if r.Code != http.StatusBadRequest {
				t.Errorf("PUT with %s: %s answered %d %s, want 400", field, v, r.Code, r.Body)
				continue
			}
			m := r.json(t)
			if code, _ := m["error"].(string); code == "" || !strings.Contains(fmt.Sprint(m["message"]), field) {
				t.Errorf("PUT with %s: %s answered 400 %s; want a JSON error naming %q", field, v, r.Body, field)
			}
			if g := h.do(http.MethodGet, fmt.Sprintf("/api/v1/items/%d", item), "", nil); g.Code != http.StatusNotFound {
				t.Errorf("PUT with %s: %s was refused but item %d exists: %d %s", field, v, item, g.Code, g.Body)
			}
		}
	}
}
