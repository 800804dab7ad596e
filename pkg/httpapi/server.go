package httpapi

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/rowcache"
	"github.com/flashsale-dev/flashsale/pkg/admission"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/stockchange"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tally"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// Config is the server's configuration.
type Config struct {
	Ingress config.Ingress
	// StoreTimeout bounds each Redis and MySQL call.
	StoreTimeout time.Duration
	Brokers      []string
	// Kafka is how the readiness check and the lag read reach Brokers
	// (TLS, SASL); nil = plaintext.
	Kafka *orderlog.Security
	// Topic is the orders topic; the writer must write to it. Default
	// orderlog.OrdersTopic (tests use a topic of their own).
	Topic string
	// DLQTopic is the consumers' dead-letter topic, which the admin API
	// lists and replays from. Default orderlog.DLQTopic.
	DLQTopic string
	// Group is the orders consumer group whose lag blocks a warm. Default
	// orderlog.GroupID.
	Group string
	// MaxQty is the largest qty the API even looks at (the per-item limit is
	// checked in Redis). Default 1000.
	MaxQty int
}

// Deps are the server's connections, built and closed by main.
type Deps struct {
	DB        *sql.DB
	Stock     *stock.Store
	Publisher admission.Publisher
	// Registry serves /metrics (on Ops); Registerer (default Registry) gets
	// the metrics.
	Registry   *prometheus.Registry
	Registerer prometheus.Registerer
	Log        *slog.Logger
	// OpenAPI is served at /openapi.yaml.
	OpenAPI []byte
}

// Server is the ingress API.
type Server struct {
	cfg       Config
	db        *sql.DB
	st        *stock.Store
	status    *orderstatus.Reader // the status polls, their waits, the cache and the pay's marker
	verifier  *auth.Verifier
	admission *admission.Service
	pub       admission.Publisher // the admission path's; a DLQ replay publishes through it
	catalog   *catalog.Catalog
	changes   *stockchange.Changer
	items     *rowcache.Cache[store.Item] // the buyers' item reads: a second's TTL
	room      *waitroom.Room              // the waiting room: tickets, their polls, grants
	tally     *tally.Tally                // order answers per item, for /live
	ipl       *ipLimiter                  // nil = off
	ready     ops.Readiness
	m         *Metrics
	log       *slog.Logger
	openAPI   []byte
	ops       http.Handler // /healthz, /readyz, /metrics, off the public port
	e         *echo.Echo
}

// New builds the server and its routes.
func New(cfg Config, d Deps) (*Server, error) {
	if cfg.Topic == "" {
		cfg.Topic = orderlog.OrdersTopic
	}
	if cfg.DLQTopic == "" {
		cfg.DLQTopic = orderlog.DLQTopic
	}
	if cfg.Group == "" {
		cfg.Group = orderlog.GroupID
	}
	if cfg.MaxQty <= 0 {
		cfg.MaxQty = 1000
	}
	if d.Registerer == nil {
		d.Registerer = d.Registry
	}
	trusted, err := config.ParseCIDRs(cfg.Ingress.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("httpapi: trusted proxies: %w", err)
	}
	s := &Server{
		cfg: cfg, db: d.DB, st: d.Stock, log: d.Log, openAPI: d.OpenAPI, pub: d.Publisher,
		verifier: newVerifier(cfg.Ingress, d.Log),
		items:    rowcache.New[store.Item](time.Second, store.ErrNotFound),
		status: orderstatus.NewReader(orderstatus.ReaderConfig{StoreTimeout: cfg.StoreTimeout,
			Waiters: cfg.Ingress.StatusWaiters, Recheck: cfg.Ingress.StatusRecheck}, d.Stock, d.DB, d.Registerer, d.Log),
		room: waitroom.NewRoom(waitroom.RoomConfig{StoreTimeout: cfg.StoreTimeout, GrantTTL: cfg.Ingress.QueueGrantTTL, MoveWait: cfg.Ingress.RedisMoveWait},
			d.Stock, d.DB, waitroom.NewRoomMetrics(d.Registerer), d.Log),
		m: NewMetrics(d.Registerer),
	}
	flush := cfg.Ingress.TallyFlush
	if flush <= 0 {
		flush = time.Second
	}
	if d.Stock != nil { // nil: a server built only for its routes (ingress' OpenAPI test)
		s.tally = tally.New(d.Stock.Client(), flush, cfg.StoreTimeout, d.Log)
		s.tally.Start()
	}
	s.admission = admission.New(admission.Config{
		UserRateLimit: cfg.Ingress.UserRateLimit, AdmissionRPS: cfg.Ingress.AdmissionRPS,
		SoldOutTTL: cfg.Ingress.SoldOutTTL, PublishTimeout: cfg.Ingress.PublishTimeout,
		IdempotencyTTL: cfg.Ingress.IdempotencyTTL, StoreTimeout: cfg.StoreTimeout,
		WaitReplicas: cfg.Ingress.RedisWaitReplicas, WaitTimeout: cfg.Ingress.RedisWaitTimeout, MoveWait: cfg.Ingress.RedisMoveWait,
		BucketWait: cfg.Ingress.Buckets.Wait, BucketPoll: cfg.Ingress.Buckets.Poll,
	}, admission.Deps{Stock: d.Stock, DB: d.DB, Publisher: d.Publisher}, admission.NewMetrics(d.Registerer), d.Log)
	s.catalog = catalog.New(d.DB, d.Stock, s.consumerLag)
	s.changes = stockchange.New(d.DB, d.Stock, cfg.StoreTimeout, d.Log)
	if cfg.Ingress.IPRateLimit > 0 {
		// A quarter of the store timeout: the check fails open, so it must
		// never cost a request a whole timeout of its own.
		s.ipl = &ipLimiter{rdb: d.Stock.Client(), perSec: int64(cfg.Ingress.IPRateLimit), timeout: cfg.StoreTimeout / 4}
	}
	// MySQL is optional: admission needs Redis and Kafka only, so a MySQL
	// failover degrades the ingress (status of ids it has not cached,
	// admin, the audit) without taking every replica out of its Service.
	s.ready = ops.Readiness{Timeout: cfg.StoreTimeout, Optional: map[string]bool{"mysql": true}, Checks: map[string]ops.Check{
		"redis": func(ctx context.Context) error { return d.Stock.Client().Ping(ctx).Err() },
		"mysql": func(ctx context.Context) error { return d.DB.PingContext(ctx) },
		"kafka": func(ctx context.Context) error { return cfg.Kafka.Ping(ctx, cfg.Brokers) },
		// Without keys from the identity provider every token is refused:
		// keep such a replica out of rotation. Always ok with HS256.
		"auth": s.verifier.Ready,
	}}
	s.ops = ops.Mux(d.Registry, s.ready)
	s.e = s.routes(ipExtractor(trusted))
	return s, nil
}

// StopWaiting makes every status poll waiting on ?wait= answer now (with
// its PENDING) and the later ones answer at once. Give it to
// http.Server.RegisterOnShutdown, so a shutdown does not wait for them.
func (s *Server) StopWaiting() {
	s.status.Stop()
	s.room.Stop()
}

// Close flushes the order-answer counts of /live that are still in memory
// and stops their flusher, within ctx. Call it once the HTTP server has
// drained, so the last answers are counted.
func (s *Server) Close(ctx context.Context) error {
	if s.tally == nil {
		return nil
	}
	return s.tally.Close(ctx)
}

// Readiness is what /readyz checks, for a watcher of the dependencies
// (ops.WatchDependencies) beside the probes.
func (s *Server) Readiness() ops.Readiness { return s.ready }

// Echo returns the public HTTP handler: the API, /healthz, /openapi.yaml and
// the operators' console page (/admin/console), which carries no data, so
// loading it needs no token. /readyz and /metrics are on Ops, not here.
func (s *Server) Echo() *echo.Echo { return s.e }

// Ops returns the ops handler, /healthz, /readyz and /metrics, for a
// listener of its own (FLASHSALE_METRICS_ADDR): on the public port they
// would let anonymous callers make the ingress ping MySQL, Redis and Kafka
// and render every metric, as often as they like.
func (s *Server) Ops() http.Handler { return s.ops }

func (s *Server) routes(ipx echo.IPExtractor) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = ipx
	e.HTTPErrorHandler = s.errorHandler
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.ErrorContext(c.Request().Context(), "panic", "err", err, "stack", string(stack))
			return err
		},
	}))
	e.Use(traceRequests) // before requestID and observe: their log lines carry the span's ids
	e.Use(s.requestID, s.observe, bodyLimit)

	e.GET("/healthz", echo.WrapHandler(ops.LivenessHandler()))
	e.GET("/openapi.yaml", s.serveOpenAPI)
	e.GET(consolePath, serveConsole) // the operators' page (pkg/console): no data, no token needed to load it

	// Middleware goes on each route, never on a group: Echo runs a group's
	// middleware through catch-all routes, which answer 404 where the path
	// exists and only the method does not (405 with Allow, as HTTP wants
	// and the fuzzer in deploy/contract checks).
	var limited []echo.MiddlewareFunc
	if s.ipl != nil {
		limited = append(limited, s.ipLimit)
	}
	user := append(limited[:len(limited):len(limited)], s.requireUser)
	admin := append(user[:len(user):len(user)], s.requireAdmin)
	e.GET("/.well-known/flashsale-receipt-key", s.getReceiptKey, limited...)
	api := e.Group("/api/v1")
	api.GET("/items/:id", s.getItem, limited...)
	api.GET("/items/:id/transcript", s.getTranscript, limited...)
	api.POST("/items/:id/queue", s.takeTicket, user...)
	api.GET("/items/:id/queue/:ticket", s.getTicket, user...)
	api.POST("/orders", s.postOrder, user...)
	api.GET("/orders", s.heldOrder, user...)
	api.GET("/orders/:request_id", s.getOrder, user...)
	api.POST("/orders/:request_id/pay", s.payOrder, user...)

	api.GET("/admin/items", s.listItems, admin...)
	api.GET("/admin/items/:id", s.getAdminItem, admin...)
	api.PUT("/admin/items/:id", s.putItem, admin...)
	api.PATCH("/admin/items/:id", s.patchItem, admin...)
	api.POST("/admin/items/:id/end", s.endItem, admin...)
	api.POST("/admin/items/:id/warm", s.warmItem, admin...)
	api.POST("/admin/items/:id/stock", s.changeStock, admin...)
	api.GET("/admin/items/:id/audit", s.auditItem, admin...)
	api.GET("/admin/items/:id/live", s.liveItem, admin...)
	api.GET("/admin/items/:id/queue", s.getAdminQueue, admin...)
	api.GET("/admin/dlq", s.listDLQ, admin...)
	api.GET("/admin/dlq/:offset", s.getDLQ, admin...)
	api.POST("/admin/dlq/:offset/replay", s.replayDLQ, admin...)
	return e
}

// consumerLag sums the orders group's lag over the topic's partitions.
func (s *Server) consumerLag(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	return s.cfg.Kafka.TotalLag(ctx, s.cfg.Brokers, s.cfg.Group, s.cfg.Topic)
}

func (s *Server) serveOpenAPI(c echo.Context) error {
	return c.Blob(200, "application/yaml", s.openAPI)
}
