package orderstatus

import "testing"

// TestAnnouncementCarriesWhatAPollMayAnswer: a channel message is a request
// id and, from status_put.lua, the value it stored; a woken poll answers
// that value's JSON without reading Redis again, and reads again for
// anything else: a bare id (the pay's in-doubt marker, status_mark.lua, or
// a writer older than status in messages), the in-doubt marker itself, or
// a value of another shape. No stack: the parsing alone.
func TestAnnouncementCarriesWhatAPollMayAnswer(t *testing.T) {
	for _, c := range []struct {
		payload, rid, json string
		inDoubt            bool
	}{
		{payload: `7-0190a1b2c3d4e5f6a7b8c9d0e1f2 2|{"status":"UNPAID"}`, rid: "7-0190a1b2c3d4e5f6a7b8c9d0e1f2", json: `{"status":"UNPAID"}`},
		{payload: `7.3-0190a1b2c3d4e5f6a7b8c9d0e1f2 3|{"status":"PAID","note":"a b"}`, rid: "7.3-0190a1b2c3d4e5f6a7b8c9d0e1f2", json: `{"status":"PAID","note":"a b"}`},
		{payload: "7-0190a1b2c3d4e5f6a7b8c9d0e1f2", rid: "7-0190a1b2c3d4e5f6a7b8c9d0e1f2"},
		{payload: "7-0190a1b2c3d4e5f6a7b8c9d0e1f2 2|", rid: "7-0190a1b2c3d4e5f6a7b8c9d0e1f2", inDoubt: true},
		{payload: "7-0190a1b2c3d4e5f6a7b8c9d0e1f2 garbage", rid: "7-0190a1b2c3d4e5f6a7b8c9d0e1f2"},
	} {
		a := parseAnnouncement(c.payload)
		if a.RequestID != c.rid {
			t.Errorf("%q: request %q, want %q", c.payload, a.RequestID, c.rid)
		}
		js, doubt := cachedStatus(string(a.Status))
		if string(js) != c.json || doubt != c.inDoubt {
			t.Errorf("%q: status %q in doubt %v, want %q %v", c.payload, js, doubt, c.json, c.inDoubt)
		}
	}
}
