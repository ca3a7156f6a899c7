package api

import (
	"net/http"

	"github.com/agentbox/agentbox/internal/access"
)

// check authenticates r and applies the tenant's rate.
func (s *Server) check(r *http.Request) (access.Caller, error) {
	return s.auth.Request(r)
}

// authenticate puts the caller in the request's context or answers 401/429.
func (s *Server) authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.check(r)
		if c.Tenant != "" {
			r = r.WithContext(access.WithCaller(r.Context(), c))
			if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
				info.caller = c
			}
		}
		if err != nil {
			if err == access.ErrUnauthenticated {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agentbox"`)
			}
			s.writeError(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}
