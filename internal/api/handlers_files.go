package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	p, err := pathQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
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
	b, err := s.svc.ReadFile(r.Context(), r.PathValue("id"), p, off, n)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	p, err := pathQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	data, err := s.readAll(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.svc.WriteFile(r.Context(), r.PathValue("id"), p, data); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) removeFile(w http.ResponseWriter, r *http.Request) {
	p, err := pathQuery(r)
	if err == nil {
		err = s.svc.Remove(r.Context(), r.PathValue("id"), p)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) mkdir(w http.ResponseWriter, r *http.Request) {
	p, err := pathQuery(r)
	if err == nil {
		err = s.svc.Mkdir(r.Context(), r.PathValue("id"), p)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listDir(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "."
	}
	ents, err := s.svc.ListDir(r.Context(), r.PathValue("id"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Entries []client.FileEntry `json:"entries"`
	}{ents})
}

func (s *Server) stat(w http.ResponseWriter, r *http.Request) {
	p, err := pathQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.svc.Stat(r.Context(), r.PathValue("id"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// download streams a tar. Until the first byte the error is an ordinary envelope;
// after it, the status is sent, so the error travels as trailers.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "."
	}
	w.Header().Set("Trailer", client.ErrorTrailer+", "+client.ErrorStatusTrailer)
	tw := &lazyWriter{w: w, ctype: "application/x-tar"}
	err := s.svc.Download(r.Context(), r.PathValue("id"), p, tw)
	if err == nil {
		if !tw.started {
			tw.start()
		}
		return
	}
	if !tw.started {
		w.Header().Del("Trailer")
		s.writeError(w, r, err)
		return
	}
	status, e := wire.Map(err, describe(r), s.red)
	if status == http.StatusInternalServerError {
		s.log.Error("download failed", "request", w.Header().Get(requestIDHeader), "err", err)
	}
	b, _ := jsonASCII(client.Envelope{Error: &e})
	w.Header().Set(client.ErrorTrailer, string(b))
	w.Header().Set(client.ErrorStatusTrailer, strconv.Itoa(status))
}

// lazyWriter sends the status and headers with the first byte.
type lazyWriter struct {
	w       http.ResponseWriter
	ctype   string
	started bool
}

func (l *lazyWriter) start() {
	l.started = true
	l.w.Header().Set("Content-Type", l.ctype)
	l.w.WriteHeader(http.StatusOK)
}

func (l *lazyWriter) Write(b []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(b)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "."
	}
	err := s.svc.Upload(r.Context(), r.PathValue("id"), p, s.body(w, r))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = mbe
		}
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
