package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

func (s *Server) patch(w http.ResponseWriter, r *http.Request) {
	var req client.PatchRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Patch == "" {
		s.writeError(w, r, wire.BadRequest("patch is empty"))
		return
	}
	rep, err := s.svc.ApplyPatch(r.Context(), r.PathValue("id"), []byte(req.Patch))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) strReplace(w http.ResponseWriter, r *http.Request) {
	var req client.StrReplaceRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Old == "" {
		s.writeError(w, r, wire.BadRequest("old is empty: it must match exactly once"))
		return
	}
	if err := s.svc.StrReplace(r.Context(), r.PathValue("id"), req.Path, req.Old, req.New); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	d, err := s.svc.Diff(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/x-diff")
	w.Header().Set("Content-Length", strconv.Itoa(len(d)))
	w.Write(d)
}

func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	var req client.ExportRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.svc.Export(r.Context(), r.PathValue("id"), req.Path)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, a)
}

func (s *Server) readArtifact(w http.ResponseWriter, r *http.Request) {
	off, err := intQuery(r, "offset")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := intQuery(r, "length")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, a, err := s.svc.ReadArtifact(r.Context(), r.PathValue("ref"), off, n)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	meta, err := jsonASCII(a)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set(client.ArtifactHeader, string(meta))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// jsonASCII encodes v as JSON with every non-ASCII character escaped, fit for a
// header value.
func jsonASCII(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, r := range string(b) {
		switch {
		case r < 0x80:
			out.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			out.WriteString(`\u` + strconv.FormatInt(int64(0xD800+(r>>10)), 16) + `\u` + strconv.FormatInt(int64(0xDC00+(r&0x3FF)), 16))
		default:
			h := strconv.FormatInt(int64(r), 16)
			for len(h) < 4 {
				h = "0" + h
			}
			out.WriteString(`\u` + h)
		}
	}
	return out.Bytes(), nil
}
