package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// These tests keep the description exact where Schemathesis (make test,
// deploy/contract/run.sh) cannot look: answers a healthy stack never gives
// (429, 503), error codes, and links that would silently never fire.

type node = map[string]any

func loadDoc(t *testing.T) node {
	t.Helper()
	var doc node
	if err := yaml.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// deref follows a local "$ref" ("#/components/...") until it reaches an object.
func deref(t *testing.T, doc, n node) node {
	t.Helper()
	for n != nil {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := cur.(node)
			cur = m[part]
		}
		if cur == nil {
			t.Fatalf("unresolved $ref %s", ref)
		}
		n = cur.(node)
	}
	return n
}

type operation struct {
	path, method string
	op           node
}

func operations(doc node) []operation {
	var ops []operation
	for path, item := range doc["paths"].(node) {
		for method, op := range item.(node) {
			ops = append(ops, operation{path, method, op.(node)})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return ops
}

func (o operation) label() string { return strings.ToUpper(o.method) + " " + o.path }

// TestOpenAPIDeclaresEveryAnswer: every operation has an id, every answer
// carries X-Request-Id, and the statuses middleware can give are declared
// where it runs: 401 behind a token, 403 on admin routes, 415 with a body,
// 429 under /api/v1 (the IP limiter), 503 wherever a store is read (but
// the live view, which names the stores it could not read instead).
func TestOpenAPIDeclaresEveryAnswer(t *testing.T) {
	doc := loadDoc(t)
	for _, o := range operations(doc) {
		if id, _ := o.op["operationId"].(string); id == "" {
			t.Errorf("%s: no operationId (links name operations by it)", o.label())
		}
		responses := o.op["responses"].(node)
		want := []string{}
		_, public := o.op["security"]
		api := strings.HasPrefix(o.path, "/api/v1/")
		if api && !public {
			want = append(want, "401")
		}
		if strings.HasPrefix(o.path, "/api/v1/admin/") {
			want = append(want, "403")
		}
		if _, body := o.op["requestBody"]; body {
			want = append(want, "400", "415")
		}
		if api {
			want = append(want, "429")
			// The live view answers 200 with null parts in an outage,
			// by contract: a console must keep drawing through it.
			if o.op["operationId"] != "liveItem" {
				want = append(want, "503")
			}
		}
		for _, code := range want {
			if _, ok := responses[code]; !ok {
				t.Errorf("%s: %s not declared", o.label(), code)
			}
		}
		for code, r := range responses {
			headers, _ := deref(t, doc, r.(node))["headers"].(node)
			if _, ok := headers["X-Request-Id"]; !ok {
				t.Errorf("%s %s: X-Request-Id not declared", o.label(), code)
			}
			if code == "429" || code == "503" {
				if _, ok := headers["Retry-After"]; !ok {
					t.Errorf("%s %s: Retry-After not declared", o.label(), code)
				}
			}
		}
	}
}

// TestOpenAPILinksResolve: every link names an operation that exists, sets
// parameters and body fields that operation has, and reads a field the
// source answer has. A link that resolves to nothing is skipped by the
// fuzzer without a word, and the chain it was for never runs.
func TestOpenAPILinksResolve(t *testing.T) {
	doc := loadDoc(t)
	byID := map[string]operation{}
	for _, o := range operations(doc) {
		byID[o.op["operationId"].(string)] = o
	}
	n := 0
	for _, o := range operations(doc) {
		for code, r := range o.op["responses"].(node) {
			resp := deref(t, doc, r.(node))
			links, _ := resp["links"].(node)
			for name, l := range links {
				n++
				where := o.label() + " " + code + " link " + name
				link := l.(node)
				target, ok := byID[link["operationId"].(string)]
				if !ok {
					t.Errorf("%s: no operation %v", where, link["operationId"])
					continue
				}
				params, _ := link["parameters"].(node)
				for key, expr := range params {
					in, pname, _ := strings.Cut(key, ".")
					if !hasParameter(t, doc, target.op, in, pname) {
						t.Errorf("%s: %s has no %s parameter %q", where, target.label(), in, pname)
					}
					checkExpression(t, doc, where, o, resp, expr.(string))
				}
				body, _ := link["requestBody"].(node)
				for field, expr := range body {
					if !hasProperty(t, doc, requestSchema(t, doc, target.op), field) {
						t.Errorf("%s: %s's body has no field %q", where, target.label(), field)
					}
					checkExpression(t, doc, where, o, resp, expr.(string))
				}
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d links: the chain item -> order -> status -> pay needs them", n)
	}
}

func hasParameter(t *testing.T, doc, op node, in, name string) bool {
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		pm := deref(t, doc, p.(node))
		if pm["in"] == in && pm["name"] == name {
			return true
		}
	}
	return false
}

func requestSchema(t *testing.T, doc, op node) node {
	rb, _ := op["requestBody"].(node)
	content, _ := rb["content"].(node)
	js, _ := content["application/json"].(node)
	s, _ := js["schema"].(node)
	return deref(t, doc, s)
}

// hasProperty reports whether schema s (or a branch of its oneOf: a 409
// names a request only when it is already_purchased) has property name.
func hasProperty(t *testing.T, doc, s node, name string) bool {
	if s == nil {
		return false
	}
	if branches, ok := s["oneOf"].([]any); ok {
		for _, b := range branches {
			if hasProperty(t, doc, deref(t, doc, b.(node)), name) {
				return true
			}
		}
		return false
	}
	props, _ := s["properties"].(node)
	_, ok := props[name]
	return ok
}

var expression = regexp.MustCompile(`^\$(response\.body|request\.body|request\.path)[#.]/?(\w+)$`)

func checkExpression(t *testing.T, doc node, where string, src operation, resp node, expr string) {
	m := expression.FindStringSubmatch(expr)
	if m == nil {
		t.Errorf("%s: expression %q not understood by this test", where, expr)
		return
	}
	var ok bool
	switch m[1] {
	case "response.body":
		content, _ := resp["content"].(node)
		js, _ := content["application/json"].(node)
		s, _ := js["schema"].(node)
		ok = hasProperty(t, doc, deref(t, doc, s), m[2])
	case "request.body":
		ok = hasProperty(t, doc, requestSchema(t, doc, src.op), m[2])
	case "request.path":
		ok = hasParameter(t, doc, src.op, "path", m[2])
	}
	if !ok {
		t.Errorf("%s: %s does not exist in %s", where, expr, src.label())
	}
}

// codeLiteral finds the error codes the handlers answer with, and those of
// the admin item body's rules (pkg/catalog's invalid), which they answer as
// they are.
var codeLiteral = regexp.MustCompile(`(?:badRequest\(|newErr\([^,]+, |Code: |http\.Status\w+: +|code = |invalid\()"([a-z_]+)"`)

// TestOpenAPIKnowsEveryErrorCode: every error code pkg/httpapi answers with
// (its own, and the item body's rules in pkg/catalog) is in the
// description's error schemas, and every code there is answered by some
// handler, so a new code cannot ship undocumented, nor a removed one stay
// documented.
func TestOpenAPIKnowsEveryErrorCode(t *testing.T) {
	files, err := filepath.Glob("../pkg/httpapi/*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../pkg/catalog/input.go")
	served := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range codeLiteral.FindAllStringSubmatch(string(b), -1) {
			served[m[1]] = true
		}
	}
	// Echo's own errors with no operation of their own (a method or route
	// that does not exist), and the 500 that a healthy server never gives.
	for _, c := range []string{"method_not_allowed", "bad_request", "error", "internal"} {
		if !served[c] {
			t.Errorf("pkg/httpapi no longer answers %q: drop it from this test", c)
		}
		delete(served, c)
	}
	doc := loadDoc(t)
	described := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case node:
			if props, ok := v["properties"].(node); ok {
				if e, ok := props["error"].(node); ok {
					for _, c := range e["enum"].([]any) {
						described[c.(string)] = true
					}
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc["components"])
	if len(served) < 20 {
		t.Fatalf("found only %d error codes in pkg/httpapi: the pattern no longer matches the code", len(served))
	}
	for c := range served {
		if !described[c] {
			t.Errorf("pkg/httpapi answers error %q, which ingress/openapi.yaml does not describe", c)
		}
	}
	for c := range described {
		if !served[c] {
			t.Errorf("ingress/openapi.yaml describes error %q, which pkg/httpapi never answers", c)
		}
	}
}
