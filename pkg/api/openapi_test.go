package api

import (
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

type node = map[string]any

// schemaRef is the components/schemas name a property's schema names:
// {$ref}, {allOf: [{$ref}]} (a ref with a description or nullable beside
// it) or an array's items; "" for an inline schema.
func schemaRef(n node) string {
	if items, ok := n["items"].(node); ok {
		return schemaRef(items)
	}
	if all, ok := n["allOf"].([]any); ok && len(all) == 1 {
		if a, ok := all[0].(node); ok {
			return schemaRef(a)
		}
	}
	ref, _ := n["$ref"].(string)
	return strings.TrimPrefix(ref, "#/components/schemas/")
}

// jsonFields maps t's JSON names to their fields (t a struct, or a pointer
// to or slice of one).
func jsonFields(t *testing.T, typ reflect.Type) map[string]reflect.StructField {
	t.Helper()
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		t.Fatalf("%v is not a struct", typ)
	}
	out := map[string]reflect.StructField{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			// An embedded struct's fields are the outer object's, as
			// encoding/json writes them.
			maps.Copy(out, jsonFields(t, f.Type))
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			t.Errorf("%v.%s has no json tag (the wire name would be the Go name)", typ, f.Name)
			continue
		}
		out[name] = f
	}
	return out
}

// matchSchema holds typ to the object schema name of schemas: the same property
// names, a property required exactly when its field is not omitempty or
// omitzero, and the same again for every property whose schema is another
// object of components/schemas (nested, in arrays, or under allOf).
func matchSchema(t *testing.T, schemas node, name string, typ reflect.Type, seen map[string]bool) {
	t.Helper()
	if seen[name] {
		return
	}
	seen[name] = true
	s, ok := schemas[name].(node)
	if !ok {
		t.Fatalf("ingress/openapi.yaml has no schema %s", name)
	}
	props, _ := s["properties"].(node)
	if len(props) == 0 {
		t.Fatalf("schema %s has no properties", name)
	}
	required := map[string]bool{}
	req, _ := s["required"].([]any)
	for _, r := range req {
		required[r.(string)] = true
	}
	fields := jsonFields(t, typ)
	var onlyYAML, onlyGo []string
	for p := range props {
		if _, ok := fields[p]; !ok {
			onlyYAML = append(onlyYAML, p)
		}
	}
	for p := range fields {
		if _, ok := props[p]; !ok {
			onlyGo = append(onlyGo, p)
		}
	}
	sort.Strings(onlyYAML)
	sort.Strings(onlyGo)
	if len(onlyYAML) > 0 || len(onlyGo) > 0 {
		t.Errorf("schema %s against %v: properties without a Go field %v; Go fields the schema lacks %v", name, typ, onlyYAML, onlyGo)
	}
	for p, f := range fields {
		pn, ok := props[p].(node)
		if !ok {
			continue
		}
		opts := strings.Split(f.Tag.Get("json"), ",")[1:]
		optional := slices.Contains(opts, "omitempty") || slices.Contains(opts, "omitzero")
		switch {
		case required[p] && optional:
			t.Errorf("schema %s: %s is required, but %v.%s's json tag %q leaves it out when empty", name, p, typ, f.Name, f.Tag.Get("json"))
		case !required[p] && !optional:
			t.Errorf("schema %s: %s is optional, but %v.%s's json tag %q always sends it (omitempty or omitzero, or required)", name, p, typ, f.Name, f.Tag.Get("json"))
		}
		if ref := schemaRef(pn); ref != "" {
			if sub, _ := schemas[ref].(node); sub["type"] == "object" {
				matchSchema(t, schemas, ref, f.Type, seen)
			}
		}
	}
}

// TestAuditMatchesOpenAPI: AuditReport is what ingress/openapi.yaml says the
// admin audit answers (GET /api/v1/admin/items/{id}/audit, 200), property for
// property both ways, with per_bucket's AuditBucket and waitlist's Waitlist.
func TestAuditMatchesOpenAPI(t *testing.T) {
	doc := readOpenAPI(t)
	get := func(n node, path ...string) node {
		for _, p := range path {
			next, ok := n[p].(node)
			if !ok {
				t.Fatalf("ingress/openapi.yaml: no %s (of %s)", p, strings.Join(path, " > "))
			}
			n = next
		}
		return n
	}
	op := get(doc, "paths", "/api/v1/admin/items/{id}/audit", "get", "responses", "200", "content", "application/json", "schema")
	name := schemaRef(op)
	if name == "" {
		t.Fatalf("the admin audit's 200 schema is not a $ref to components/schemas: %v", op)
	}
	seen := map[string]bool{}
	matchSchema(t, get(doc, "components", "schemas"), name, reflect.TypeFor[AuditReport](), seen)
	for _, want := range []string{"Audit", "AuditBucket", "Waitlist"} {
		if !seen[want] {
			t.Errorf("schema %s was not reached from the audit's answer (reached %v)", want, seen)
		}
	}
}

// TestQueueMatchesOpenAPI: the waiting room's and the dead letters' answers are what
// ingress/openapi.yaml says, property for property both ways: the ticket
// taken (Ticket), its status (TicketStatus, with its InclusionProof), the
// operator's view (AdminQueue, with its Waitlist), the receipt key and the
// transcript (with its Rounds); and the items as a buyer and an admin read
// them (Item, AdminItem, AdminItemDetail, ItemPage).
func TestQueueMatchesOpenAPI(t *testing.T) {
	doc := readOpenAPI(t)
	components, _ := doc["components"].(node)
	schemas, _ := components["schemas"].(node)
	for name, typ := range map[string]reflect.Type{
		"Ticket":       reflect.TypeFor[Ticket](),
		"TicketStatus": reflect.TypeFor[TicketStatus](),
		"AdminQueue":   reflect.TypeFor[AdminQueue](),
		"ReceiptKey":   reflect.TypeFor[ReceiptKey](),
		// The transcript is the pure draw package's type (flashsalectl
		// decodes it too); held to the schema here with the others.
		"Transcript": reflect.TypeFor[draw.RoundTranscript](),
		// The dead-letter topic's answers.
		"DeadLetterPage":   reflect.TypeFor[DeadLetterPage](),
		"DeadLetterDetail": reflect.TypeFor[DeadLetterDetail](),
		"DeadLetterReplay": reflect.TypeFor[DeadLetterReplay](),
		// The items, as a buyer and an admin read them.
		"Item":            reflect.TypeFor[Item](),
		"AdminItem":       reflect.TypeFor[AdminItem](),
		"AdminItemDetail": reflect.TypeFor[AdminItemDetail](),
		"ItemPage":        reflect.TypeFor[ItemPage](),
	} {
		seen := map[string]bool{}
		matchSchema(t, schemas, name, typ, seen)
		if !seen[name] {
			t.Errorf("schema %s was not checked (reached %v)", name, seen)
		}
	}
}

// TestImportsNothingOfTheModule: every client of the API links this
// package, so it must not bring the module's packages (and their store
// clients) along.
func TestImportsNothingOfTheModule(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Equal(deps, []string{"github.com/flashsale-dev/flashsale/pkg/api"}) {
		t.Errorf("pkg/api depends on %v, expected nothing but the standard library", deps)
	}
}

// readOpenAPI is ingress/openapi.yaml as a tree.
func readOpenAPI(t *testing.T) node {
	t.Helper()
	b, err := os.ReadFile("../../ingress/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}
