package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"
)

// MaxBody is the largest request body accepted; every body in the API is a
// few dozen bytes, so anything bigger is abuse or a bug.
const MaxBody = 4 << 10

// bodyLimit refuses oversized bodies with 400 before a handler reads them,
// and caps the reader for bodies without a Content-Length.
func bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > MaxBody {
			return badRequest("body_too_large", fmt.Sprintf("request body larger than %d bytes", MaxBody))
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBody)
		return next(c)
	}
}

// decodeStrict reads one JSON object into dst: unknown fields, wrong types,
// trailing data and oversized bodies are 400s; a body not declared
// application/json is a 415, so a form or a text/plain post (what a
// cross-site page can send without a CORS preflight) is never admitted.
// An empty body is a 400 whatever its type: there is no content to refuse.
func decodeStrict(c echo.Context, dst any) error {
	raw, err := readBody(c, echo.MIMEApplicationJSON)
	if err != nil {
		return err
	}
	return decodeStrictBytes(raw, dst)
}

// readBody reads the request body, refusing (415) a non-empty one whose
// Content-Type is none of types; the first is the one the answer names.
func readBody(c echo.Context, types ...string) ([]byte, error) {
	raw, err := io.ReadAll(c.Request().Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, badRequest("body_too_large", fmt.Sprintf("request body larger than %d bytes", MaxBody))
	}
	if err != nil {
		return nil, badRequest("bad_body", "could not read the request body")
	}
	if len(raw) > 0 && !declaredAs(c.Request().Header.Get(echo.HeaderContentType), types...) {
		return nil, newErr(http.StatusUnsupportedMediaType, "unsupported_media_type", "the request body must be sent as Content-Type: "+types[0])
	}
	return raw, nil
}

// decodeStrictBytes is decodeStrict's decoding of a body already read.
//
// Every body here is an object: a bare null (which the decoder would take as
// "leave dst alone"), array, string or number is refused before decoding, so
// no body that is not an object can reach a handler as an empty one.
func decodeStrictBytes(raw []byte, dst any) error {
	if body := bytes.TrimLeft(raw, " \t\r\n"); len(body) > 0 && body[0] != '{' {
		return badRequest("invalid_json", "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return badRequest("invalid_json", jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("invalid_json", "unexpected data after the JSON object")
	}
	return nil
}

// declaredAs reports whether a Content-Type value is one of types, with or
// without parameters (charset=utf-8), in any case.
func declaredAs(ctype string, types ...string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return false
	}
	for _, t := range types {
		if mt == t {
			return true
		}
	}
	return false
}

// jsonProblem turns a decoder error into a message safe to show: it names
// the field, never echoes the input back.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be a %s", te.Field, te.Type.String())
	case errors.As(err, &se):
		return "malformed JSON"
	case errors.Is(err, io.EOF):
		return "empty body; a JSON object is required"
	}
	return err.Error()
}

// pathID parses a positive int64 path parameter.
func pathID(c echo.Context, name string) (int64, error) {
	v := c.Param(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != v {
		return 0, badRequest("invalid_id", name+" must be a positive 64-bit decimal integer")
	}
	return id, nil
}

// adminBody reads an admin write: the path's {id} and its body, sent as one
// of types (the first is the one a 415 names), decoded by decodeTyped with
// the fields' kinds.
func adminBody[T any](c echo.Context, kinds map[string]string, types ...string) (id int64, b T, err error) {
	if id, err = pathID(c, "id"); err != nil {
		return 0, b, err
	}
	raw, err := readBody(c, types...)
	if err != nil {
		return 0, b, err
	}
	return id, b, decodeTyped(raw, kinds, &b)
}

// decodeTyped reads an admin body into dst. Before the struct decode it
// checks each known field's JSON type (kinds), since the decoder turns null
// into "not sent" (so "buckets": null, optional in a PUT, was accepted) and
// names no field for a time of the wrong type. Unknown fields and
// non-objects are left to the strict decode, which refuses them.
func decodeTyped(raw []byte, kinds map[string]string, dst any) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) == nil {
		names := make([]string, 0, len(fields))
		for k := range fields {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			kind, known := kinds[k]
			if known && !jsonKindIs(fields[k], kind) {
				art := "a"
				if kind == "integer" {
					art = "an"
				}
				return badRequest("invalid_json", fmt.Sprintf("field %q must be %s %s", k, art, kind))
			}
		}
	}
	return decodeStrictBytes(raw, dst)
}

// jsonKindIs reports whether the JSON value v is a string or a number
// ("integer": the struct decode then refuses a fraction or an exponent).
func jsonKindIs(v json.RawMessage, kind string) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	switch kind {
	case "string":
		return v[0] == '"'
	case "integer":
		return v[0] == '-' || (v[0] >= '0' && v[0] <= '9')
	case "boolean":
		return v[0] == 't' || v[0] == 'f'
	}
	return false
}
