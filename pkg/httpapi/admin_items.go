package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The list's page size: 100 unless limit says otherwise, at most 1000.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// mimeMergePatch is RFC 7386's media type, a PATCH's (application/json is
// accepted too: there is one patch format, so it cannot be misread).
const mimeMergePatch = "application/merge-patch+json"

// listItems is GET /api/v1/admin/items?limit=&after=: items in id order,
// a page of limit after the id after (keyset: a page is stable whatever is
// created meanwhile, and costs the same at any depth).
func (s *Server) listItems(c echo.Context) error {
	limit, err := queryInt(c, "limit", defaultListLimit, 1, maxListLimit, badRequest("invalid_limit", "limit must be an integer from 1 to 1000"))
	if err != nil {
		return err
	}
	after, err := queryInt(c, "after", 0, 0, 1<<63-1, badRequest("invalid_after", "after must be an item id (a 64-bit decimal integer without sign or leading zeros) or 0"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.StoreTimeout)
	defer cancel()
	// One more than asked, to know whether a next page exists.
	items, err := store.ListItems(ctx, s.db, after, int(limit)+1)
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "admin: list items", "err", err)
		return unavailable("mysql unavailable")
	}
	page := api.ItemPage{Items: []api.AdminItem{}}
	for i, it := range items {
		if i == int(limit) {
			last := page.Items[i-1].ID
			page.NextAfter = &last
			break
		}
		page.Items = append(page.Items, toAdminItem(it))
	}
	return c.JSON(http.StatusOK, page)
}

// queryInt parses an optional decimal query parameter, sent at most once,
// within [lo, hi]; invalid is the answer to any other.
func queryInt(c echo.Context, name string, def, lo, hi int64, invalid *apiError) (int64, error) {
	vs, sent := c.QueryParams()[name]
	if !sent {
		return def, nil
	}
	if len(vs) != 1 {
		return 0, invalid
	}
	n, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil || n < lo || n > hi || strconv.FormatInt(n, 10) != vs[0] {
		return 0, invalid
	}
	return n, nil
}

// getAdminItem is GET /api/v1/admin/items/{id}: read from MySQL, never from
// the buyers' item cache, and Redis' stock (two round trips).
func (s *Server) getAdminItem(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	d, _, err := s.adminDetail(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("no such item")
	}
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "admin: get item", "err", err)
		return unavailable("mysql unavailable")
	}
	return c.JSON(http.StatusOK, d)
}

// adminDetail reads item id as the admin get shows it: the row from MySQL
// (its error, store.ErrNotFound included, is the call's), and Redis' stock
// when Redis answers (redisOK false, and the Redis fields absent, when not).
func (s *Server) adminDetail(ctx context.Context, id int64) (d api.AdminItemDetail, redisOK bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	it, err := store.GetItem(ctx, s.db, id)
	if err != nil {
		return api.AdminItemDetail{}, false, err
	}
	d = api.AdminItemDetail{AdminItem: toAdminItem(it)}
	left, warmed, err := s.st.Stock(ctx, id)
	if err != nil {
		return d, false, nil
	}
	d.RedisWarmed = &warmed
	if warmed {
		d.RedisStock = &left
	}
	return d, true, nil
}

// patchItem is PATCH /api/v1/admin/items/{id}: a JSON merge patch (RFC
// 7386) of the item's fields, checked by PUT's rules once merged onto the
// stored item (under its row lock), and saved as a PUT of the result
// (catalog.Catalog.PatchInput).
func (s *Server) patchItem(c echo.Context) error {
	id, p, err := adminBody[catalog.Input](c, catalog.InputKinds, mimeMergePatch, echo.MIMEApplicationJSON)
	if err != nil {
		return err
	}
	it, err := s.catalog.PatchInput(c.Request().Context(), id, p, s.cfg.Ingress.Buckets.Max)
	return s.savedItem(c, id, it, err)
}
