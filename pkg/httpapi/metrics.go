package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the HTTP layer's instruments. Labels are route templates and a
// fixed method set, never paths, ids or users.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// stockChanges counts POST .../stock calls by direction (restock,
	// withdraw) and result (applied, replayed, conflict, refused,
	// not_found, pending, unavailable).
	stockChanges *prometheus.CounterVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_http_requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flashsale_http_request_duration_seconds",
			Help:    "HTTP request latency by route template and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
		stockChanges: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_stock_changes_total",
			Help: "Admin stock changes (POST /api/v1/admin/items/{id}/stock) by direction (restock, withdraw) and result: applied (changed now), replayed (an earlier call with the operation id did), conflict (the id was used for another change), refused (over the stock limit), not_found, pending (recorded, Redis not yet applied: retried or repaired), unavailable (nothing recorded).",
		}, []string{"direction", "result"}),
	}
}

var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodPost: true, http.MethodPut: true, http.MethodDelete: true,
	http.MethodHead: true, http.MethodOptions: true, http.MethodPatch: true,
}

// observe records one finished request.
func (m *Metrics) observe(c echo.Context, took time.Duration) {
	route := c.Path()
	if route == "" || route == "/*" {
		route = "unmatched"
	}
	method := c.Request().Method
	if !knownMethods[method] {
		method = "other"
	}
	code := strconv.Itoa(c.Response().Status)
	m.requests.WithLabelValues(route, method, code).Inc()
	m.duration.WithLabelValues(route, method).Observe(took.Seconds())
}
