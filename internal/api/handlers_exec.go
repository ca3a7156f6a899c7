package api

import (
	"context"
	"net/http"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var req client.ExecRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.svc.Exec(r.Context(), r.PathValue("id"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// runOnce creates an environment, runs one command in it and destroys it: the
// result is sent once the command's tree is gone, and the environment's
// teardown (the sandbox's namespaces, cgroup and layers) finishes after it, in
// the background, before anything of it is reused (Shutdown waits for it). The
// environment is the caller's alone from its create on, as any other.
func (s *Server) runOnce(w http.ResponseWriter, r *http.Request) {
	var req client.RunRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.svc.Create(r.Context(), req.Environment)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.teardowns.Add(1)
	defer func() {
		// The caller's principal stays in the context; its cancellation does not.
		ctx := context.WithoutCancel(r.Context())
		go func() {
			defer s.teardowns.Done()
			if err := s.svc.Destroy(ctx, e.ID); err != nil {
				s.log.Warn("destroy after run", "env", e.ID, "err", err)
			}
		}()
	}()
	res, err := s.svc.Exec(r.Context(), e.ID, req.Exec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	var req client.ExecRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := s.svc.Start(r.Context(), r.PathValue("id"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, client.Process{ID: id})
}

func (s *Server) wait(w http.ResponseWriter, r *http.Request) {
	res, err := s.svc.Wait(r.Context(), r.PathValue("id"), r.PathValue("proc"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) stdin(w http.ResponseWriter, r *http.Request) {
	data, err := s.readAll(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	eof := r.URL.Query().Get("eof")
	if eof != "" && eof != "true" && eof != "false" {
		s.writeError(w, r, wire.BadRequest("eof must be true or false"))
		return
	}
	if err := s.svc.WriteStdin(r.Context(), r.PathValue("id"), r.PathValue("proc"), data, eof == "true"); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) resize(w http.ResponseWriter, r *http.Request) {
	var req client.ResizeRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.svc.Resize(r.Context(), r.PathValue("id"), r.PathValue("proc"), req); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) signal(w http.ResponseWriter, r *http.Request) {
	var req client.SignalRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Signal == "" {
		s.writeError(w, r, wire.BadRequest("signal is empty"))
		return
	}
	if err := s.svc.Signal(r.Context(), r.PathValue("id"), r.PathValue("proc"), req.Signal); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
