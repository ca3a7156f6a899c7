package api

import (
	"net/http"

	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/wire"
)

// routeTable is every route of the API but /mcp. api/openapi.yaml describes exactly
// these (a test holds them equal).
func (s *Server) routeTable() []Route {
	const (
		envs  = "/v1/environments"
		env   = envs + "/{id}"
		proc  = env + "/processes/{proc}"
		files = env + "/files"
	)
	return []Route{
		{"GET", "/healthz", false, s.healthz},
		{"GET", "/metrics", false, s.serveMetrics},

		{"POST", envs, true, s.createEnv},
		{"GET", envs, true, s.listEnvs},
		{"GET", env, true, s.getEnv},
		{"DELETE", env, true, s.destroyEnv},
		{"POST", env + "/pause", true, s.pauseEnv},
		{"POST", env + "/resume", true, s.resumeEnv},
		{"POST", env + "/snapshot", true, s.snapshotEnv},
		{"POST", env + "/fork", true, s.forkEnv},

		{"POST", env + "/exec", true, s.exec},
		{"POST", "/v1/run", true, s.runOnce},
		{"POST", env + "/processes", true, s.start},
		{"GET", proc + "/wait", true, s.wait},
		{"GET", proc + "/events", true, s.events},
		{"POST", proc + "/stdin", true, s.stdin},
		{"POST", proc + "/signal", true, s.signal},
		{"POST", proc + "/resize", true, s.resize},

		{"GET", files, true, s.readFile},
		{"PUT", files, true, s.writeFile},
		{"DELETE", files, true, s.removeFile},
		{"GET", files + "/list", true, s.listDir},
		{"GET", files + "/stat", true, s.stat},
		{"POST", files + "/mkdir", true, s.mkdir},
		{"GET", files + "/tar", true, s.download},
		{"PUT", files + "/tar", true, s.upload},

		{"POST", env + "/patch", true, s.patch},
		{"POST", env + "/str-replace", true, s.strReplace},
		{"GET", env + "/diff", true, s.diff},
		{"PUT", env + "/network", true, s.setNetwork},
		{"GET", env + "/network/log", true, s.networkLog},
		{"GET", env + "/network/events", true, s.networkEvents},
		{"POST", env + "/artifacts", true, s.export},
		{"GET", "/v1/artifacts/{ref}", true, s.readArtifact},

		{"GET", "/v1/templates", true, s.listTemplates},
		{"POST", "/v1/templates", true, s.buildTemplate},
		{"GET", "/v1/templates/{name}", true, s.inspectTemplate},
		{"DELETE", "/v1/templates/{name}", true, s.removeTemplate},
	}
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.drain:
		s.writeError(w, r, wire.ErrShuttingDown)
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

// serveMetrics shows the operator (scope operator, or anyone when the
// configuration makes metrics public) every series, and a tenant's admin its own
// tenant's series only: one tenant learns nothing of another's activity.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	tenant := ""
	if !s.cfg.PublicMetrics {
		c, err := s.check(r)
		if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
			info.caller = c
		}
		if err == nil && !c.Has(config.ScopeOperator) && !c.Has(config.ScopeAdmin) {
			err = &access.ScopeError{Scope: config.ScopeAdmin}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !c.Has(config.ScopeOperator) {
			tenant = c.Tenant
		}
	}
	s.metrics.Handler(tenant).ServeHTTP(w, r)
}
