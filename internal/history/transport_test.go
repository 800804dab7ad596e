package history

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// token is a bearer JWT of user (unsigned: the transport does not verify).
func token(user string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return "Bearer " + enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(`{"sub":"`+user+`"}`)) + ".sig"
}

func TestTransportRecordsBuyerCalls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/orders":
			if !strings.Contains(string(b), `"qty":1`) {
				t.Errorf("order body lost on the way: %q", b)
			}
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"request_id":"`+rid(1)+`","status":"PENDING"}`)
		case strings.HasSuffix(r.URL.Path, "/pay"):
			io.WriteString(w, `{"status":"PAID"}`)
		case r.URL.Path == "/api/v1/orders":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"not_found","message":"x"}`)
		default:
			io.WriteString(w, `{"request_id":"`+rid(1)+`","item_id":7,"qty":1,"status":"UNPAID"}`)
		}
	}))
	defer srv.Close()
	rec := NewRecorder()
	c := &http.Client{Transport: &Transport{Rec: rec}}
	do := func(method, path, body string, h map[string]string) string {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", token("42"))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if b := do(http.MethodPost, "/api/v1/orders", `{"item_id":7,"qty":1}`, map[string]string{"Idempotency-Key": "k"}); !strings.Contains(b, rid(1)) {
		t.Fatalf("the client lost the answer's body: %q", b)
	}
	do(http.MethodGet, "/api/v1/orders/"+rid(1)+"?wait=500ms", "", nil)
	do(http.MethodPost, "/api/v1/orders/"+rid(1)+"/pay", "", nil)
	do(http.MethodGet, "/api/v1/orders?item_id=7", "", nil)
	do(http.MethodGet, "/api/v1/admin/items/7/audit", "", nil) // not a buyer call
	ops := rec.Ops()
	want := []struct {
		in  Input
		out Output
	}{
		{Input{Kind: Order, User: 42, Item: 7, Qty: 1, Key: "k"}, Output{Code: 202, RID: rid(1), Status: "PENDING"}},
		{Input{Kind: Status, User: 42, RID: rid(1), Wait: 500 * time.Millisecond}, Output{Code: 200, RID: rid(1), Status: "UNPAID", Qty: 1}},
		{Input{Kind: Pay, User: 42, RID: rid(1)}, Output{Code: 200, Status: "PAID"}},
		{Input{Kind: Held, User: 42, Item: 7}, Output{Code: 404, Error: "not_found"}},
	}
	if len(ops) != len(want) {
		t.Fatalf("%d operations recorded, want %d: %+v", len(ops), len(want), ops)
	}
	for i, w := range want {
		if ops[i].Input != w.in || ops[i].Output != w.out || !ops[i].Done || ops[i].Return < ops[i].Call {
			t.Errorf("op %d: %+v, want %+v -> %+v", i, ops[i], w.in, w.out)
		}
	}
}

func TestTransportRecordsNoAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	rec := NewRecorder()
	c := &http.Client{Transport: &Transport{Rec: rec}}
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/orders", strings.NewReader(`{"item_id":7,"qty":1}`))
	req.Header.Set("Authorization", token("5"))
	if _, err := c.Do(req); err == nil {
		t.Fatal("a closed server answered")
	}
	ops := rec.Ops()
	if len(ops) != 1 || !ops[0].Done || ops[0].Output.Code != 0 || ops[0].Output.Error == "" || ops[0].Input.User != 5 {
		t.Fatalf("%+v", ops)
	}
	if o := classify(ops[0].Input, ops[0].Output, true); o.v != unknownAny {
		t.Fatalf("an order without an answer classified %v, want unknownAny", o.v)
	}
}

// The recorder is used by every client goroutine of a fault test at once.
func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				c := r.Invoke(Input{Kind: Status, User: int64(g), RID: rid(i)})
				_ = r.Len()
				c.Return(Output{Code: 503, Error: "unavailable"})
			}
		})
	}
	wg.Wait()
	ops := r.Ops()
	if len(ops) != 800 {
		t.Fatalf("%d operations, want 800", len(ops))
	}
	for _, op := range ops {
		if !op.Done || op.Return < op.Call {
			t.Fatalf("%+v", op)
		}
	}
}
