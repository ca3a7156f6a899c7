package api

import (
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
