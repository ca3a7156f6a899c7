package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/sessionapi"
)

// TestSessionsCoordinatorHint: the coordinator's suggested actions name its HTTP
// routes; the sessions CLI gives the commands that do them instead.
func TestSessionsCoordinatorHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := client.Error{Code: client.CodeNotFound, Message: "no session nope", SuggestedAction: sessionapi.HintList}
		status := http.StatusNotFound
		if r.Method == http.MethodPost {
			e = client.Error{Code: client.CodeConflict, Message: "session s1 ended", SuggestedAction: sessionapi.HintState}
			status = http.StatusConflict
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(client.Envelope{Error: &e})
	}))
	defer srv.Close()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AGENTBOX_COORDINATOR_TOKEN=t"}
	_, se, st := run(t, env, "sessions", "show", "nope", "--coordinator", srv.URL)
	if want := "(list them: agentbox sessions ls --coordinator " + srv.URL + ")"; st != 125 || !strings.Contains(se, want) || strings.Contains(se, "GET /v1") {
		t.Errorf("show of an unknown session: exit %d, stderr %q, want %q", st, se, want)
	}
	_, se, st = run(t, env, "sessions", "cancel", "s1", "--coordinator", srv.URL)
	if want := "(read its state: agentbox sessions show s1 --coordinator " + srv.URL + ")"; st != 125 || !strings.Contains(se, want) || strings.Contains(se, "GET /v1") {
		t.Errorf("cancel of an ended session: exit %d, stderr %q, want %q", st, se, want)
	}
}
