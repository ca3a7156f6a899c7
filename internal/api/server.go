package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/wire"
)

// Options configure a Server. Config and Service are required.
type Options struct {
	Config *config.Config
	// Service is the environments (an *env.Manager).
	Service env.Service
	// Templates is the image store the templates routes serve, under the
	// tenants' templates configuration (nil: none; an *image.Store).
	Templates access.Templates
	// Runner runs the build steps that run commands (nil: such builds fail).
	Runner image.Runner
	// Logger receives one line per request and every internal error. Default:
	// discard.
	Logger *slog.Logger
}

// Server is the HTTP API.
type Server struct {
	cfg     *config.Config
	svc     *wire.Service // over the Guard
	tpl     *wire.Templates
	auth    *access.Auth
	metrics *Metrics
	red     *wire.Redactor
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler
	routes  []Route

	teardowns sync.WaitGroup // destroys after POST /v1/run, which Shutdown waits for
	drainOnce sync.Once
	drain     chan struct{} // closed when shutdown begins: streams end
	hs        *http.Server
}

// Route is one method and path pattern of the API.
type Route struct {
	Method  string
	Pattern string // net/http pattern path, e.g. /v1/environments/{id}
	Auth    bool   // needs a bearer token
	handler http.HandlerFunc
}

// New builds a server.
func New(o Options) (*Server, error) {
	if o.Config == nil || o.Service == nil {
		return nil, errors.New("api: Config and Service are required")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tenants := slices.Sorted(maps.Keys(o.Config.Tenants))
	s := &Server{cfg: o.Config, log: log, drain: make(chan struct{}),
		metrics: NewMetrics(liveCount(o.Service, tenants)),
		auth:    access.NewAuth(o.Config)}
	if p, ok := o.Service.(poolStater); ok {
		s.metrics.addPools(p.PoolStats)
	}
	if r, ok := o.Service.(refusedCounter); ok {
		s.metrics.addRefused(r.Refused)
	}
	prefixes := []string{o.Config.StateDir}
	for _, d := range o.Config.WorkspacePresets {
		prefixes = append(prefixes, d)
	}
	for _, t := range o.Config.Tenants {
		prefixes = append(prefixes, t.WorkspaceRoots...)
	}
	s.red = wire.NewRedactor(prefixes...)
	s.svc = wire.New(access.NewGuard(o.Service, o.Config, s.metrics))
	s.tpl = wire.NewTemplates(access.NewTemplateGuard(o.Templates, o.Config, o.Runner))
	s.mux = http.NewServeMux()
	for _, r := range s.routeTable() {
		s.route(r)
	}
	s.handler = s.observe(s.mux)
	s.hs = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

func (s *Server) route(r Route) {
	h := http.Handler(r.handler)
	if r.Auth {
		h = s.authenticate(h)
	}
	s.mux.Handle(r.Method+" "+r.Pattern, h)
	s.routes = append(s.routes, r)
}

// Handle serves h at pattern ("METHOD /path") behind the API's bearer tokens (the
// caller is in each request's context, see access.CallerFrom), with its request
// ids, log, metrics and envelope for unknown routes. It is how a protocol other
// than the API's own (MCP) is mounted; call it before Serve.
func (s *Server) Handle(pattern string, h http.Handler) {
	method, path, _ := strings.Cut(pattern, " ")
	s.route(Route{Method: method, Pattern: path, Auth: true, handler: h.ServeHTTP})
}

// HandleStream is Handle for an open-ended stream: its requests end when shutdown
// begins, instead of holding shutdown for the grace period.
func (s *Server) HandleStream(pattern string, h http.Handler) {
	s.Handle(pattern, s.streaming(h))
}

// Routes lists the API's routes.
func (s *Server) Routes() []Route { return slices.Clone(s.routes) }

// Service returns the environment operations the routes call, in the wire
// types, each checked against the caller in its context (an access.Guard).
func (s *Server) Service() *wire.Service { return s.svc }

// Templates returns the template operations behind the tenants' checks, for
// other front ends (MCP) to call.
func (s *Server) Templates() *wire.Templates { return s.tpl }

// Redactor returns what removes host paths from the server's error messages.
func (s *Server) Redactor() *wire.Redactor { return s.red }

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Handler is the whole API as an http.Handler.
func (s *Server) Handler() http.Handler { return s.handler }

const requestIDHeader = "Agentbox-Request-Id"

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe gives each request an id, answers unknown routes with the envelope, logs
// and counts requests. It never logs headers (the token is one).
func (s *Server) observe(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [8]byte
		rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		w.Header().Set(requestIDHeader, id)
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		info := &requestInfo{}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		h, pattern := mux.Handler(r)
		if pattern == "" {
			// No route: the mux would answer 404 or 405 in plain text; find
			// which, and answer with the envelope instead.
			probe := &statusWriter{ResponseWriter: discardWriter{http.Header{}}}
			h.ServeHTTP(probe, r)
			msg := "no such route: " + r.Method + " " + r.URL.Path
			code := http.StatusNotFound
			if probe.status == http.StatusMethodNotAllowed {
				code = http.StatusMethodNotAllowed
				msg = "method " + r.Method + " not allowed on " + r.URL.Path
				w.Header().Set("Allow", probe.Header().Get("Allow"))
			}
			writeJSON(sw, code, envelope("ENOENT", msg))
		} else {
			s.timeBody(sw, r)
			mux.ServeHTTP(sw, r)
		}
		route := pattern
		if route == "" {
			route = "unmatched"
		}
		s.metrics.request(info.caller.Tenant, route, sw.status)
		s.log.Info("request", "id", id, "method", r.Method, "route", route, "status", sw.status,
			"ms", time.Since(start).Milliseconds(), "tenant", info.caller.Tenant, "token", info.caller.Token)
	})
}

func envelope(code, msg string) client.Envelope {
	return client.Envelope{Error: &client.Error{Code: code, Message: msg}}
}

// requestInfo lets inner handlers tell observe who the caller was, for the log.
type requestInfo struct{ caller access.Caller }

type requestInfoKey struct{}

type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}

// streaming ends a long request (an event stream, an MCP session's stream) when
// shutdown begins, so that shutdown need not wait for it.
func (s *Server) streaming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-s.drain:
				cancel()
			case <-ctx.Done():
			}
		}()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Serve answers requests on ln until Shutdown, on at most limits.max_connections
// connections at once.
func (s *Server) Serve(ln net.Listener) error {
	err := s.hs.Serve(netutil.LimitListener(ln, s.cfg.Limits.MaxConnections))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, ends event streams, and lets in-flight
// requests finish until ctx is done (then cuts them). The environments are the
// Service's: closing it keeps or destroys them (env.Config.KeepOnClose).
func (s *Server) Shutdown(ctx context.Context) error {
	s.drainOnce.Do(func() { close(s.drain) })
	err := s.hs.Shutdown(ctx)
	if err != nil {
		s.hs.Close()
	}
	s.teardowns.Wait()
	return err
}
