package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// A pre-encoded answer is byte for byte, header for header, what the
// encoder writes for the same error.
func TestPreEncodedAnswerIsTheEncodersAnswer(t *testing.T) {
	s := &Server{}
	answer := func(err error) *httptest.ResponseRecorder {
		e := echo.New()
		rec := httptest.NewRecorder()
		s.errorHandler(err, e.NewContext(httptest.NewRequest(http.MethodPost, "/api/v1/orders", nil), rec))
		return rec
	}
	pre := answer(errSoldOut)
	enc := answer(newErr(http.StatusGone, "sold_out", "sold out"))
	if pre.Code != http.StatusGone || pre.Code != enc.Code {
		t.Fatalf("status %d, encoder's %d", pre.Code, enc.Code)
	}
	if pre.Body.String() != enc.Body.String() {
		t.Errorf("body %q, encoder's %q", pre.Body, enc.Body)
	}
	if got, want := pre.Header().Get(echo.HeaderContentType), enc.Header().Get(echo.HeaderContentType); got != want {
		t.Errorf("Content-Type %q, encoder's %q", got, want)
	}
}
