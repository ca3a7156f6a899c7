package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

// decode reads a JSON body of at most the configured size into v, refusing
// unknown fields (a misspelt field is an error, not a silent default).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.Limits.JSONBytes))
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var ae *wire.Error // a body that came too slowly
		if errors.As(err, &mbe) || errors.As(err, &ae) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return wire.BadRequest("empty request body: a JSON object is expected")
		}
		return wire.BadRequest("request body: %v", err)
	}
	if dec.More() {
		return wire.BadRequest("request body: more than one JSON value")
	}
	return nil
}

// decodeOptional is decode for a body that may be empty: then v stays as it is
// (a plain pause has no body).
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	br := bufio.NewReader(r.Body)
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return nil
	}
	r.Body = io.NopCloser(br)
	return s.decode(w, r, v)
}

// body limits a raw request body to the configured size.
func (s *Server) body(w http.ResponseWriter, r *http.Request) io.Reader {
	return http.MaxBytesReader(w, r.Body, int64(s.cfg.Limits.RequestBytes))
}

// readAll reads a raw body whole.
func (s *Server) readAll(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(s.body(w, r))
}

// intQuery reads a non-negative integer query parameter (absent: 0).
func intQuery(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, wire.BadRequest("%s must be a non-negative integer, got %q", name, v)
	}
	return n, nil
}

// pathQuery reads the required path parameter.
func pathQuery(r *http.Request) (string, error) {
	q := r.URL.Query()
	if !q.Has("path") {
		return "", wire.BadRequest("the path query parameter is required")
	}
	return q.Get("path"), nil
}

// labels reads label=k=v query parameters.
func labels(r *http.Request) (map[string]string, error) {
	vs := r.URL.Query()["label"]
	if len(vs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, v := range vs {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, wire.BadRequest("label %q: use label=KEY=VALUE", v)
		}
		out[k] = val
	}
	return out, nil
}

func (s *Server) createEnv(w http.ResponseWriter, r *http.Request) {
	var req client.CreateRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.svc.Create(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, e)
}

func (s *Server) listEnvs(w http.ResponseWriter, r *http.Request) {
	l, err := labels(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	envs, err := s.svc.List(r.Context(), l)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Environments []client.Environment `json:"environments"`
	}{envs})
}

func (s *Server) getEnv(w http.ResponseWriter, r *http.Request) {
	e, err := s.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) pauseEnv(w http.ResponseWriter, r *http.Request) {
	var req client.PauseRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.svc.Pause(r.Context(), r.PathValue("id"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) resumeEnv(w http.ResponseWriter, r *http.Request) {
	e, err := s.svc.Resume(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) snapshotEnv(w http.ResponseWriter, r *http.Request) {
	sn, err := s.svc.Snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sn)
}

func (s *Server) forkEnv(w http.ResponseWriter, r *http.Request) {
	var req client.ForkRequest
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	envs, err := s.svc.Fork(r.Context(), r.PathValue("id"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		Environments []client.Environment `json:"environments"`
	}{envs})
}

func (s *Server) destroyEnv(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Destroy(r.Context(), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
