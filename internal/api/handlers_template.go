package api

import (
	"net/http"

	"github.com/agentbox/agentbox/client"
)

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	list, err := s.tpl.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Templates []client.Template `json:"templates"`
	}{list})
}

func (s *Server) inspectTemplate(w http.ResponseWriter, r *http.Request) {
	info, err := s.tpl.Inspect(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// buildTemplate builds synchronously: a Debian bootstrap takes minutes, a
// fully cached build a moment.
func (s *Server) buildTemplate(w http.ResponseWriter, r *http.Request) {
	var req client.BuildTemplateRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.tpl.Build(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, info)
}

func (s *Server) removeTemplate(w http.ResponseWriter, r *http.Request) {
	if err := s.tpl.Remove(r.Context(), r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
