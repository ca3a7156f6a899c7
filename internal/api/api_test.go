package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/client"
)

func envelopeOf(t *testing.T, body []byte) client.Error {
	t.Helper()
	var env client.Envelope
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
		t.Fatalf("not an error envelope: %q", body)
	}
	return *env.Error
}

func TestAuth(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name, method, path, token string
		body                      string
		status                    int
		code                      string
	}{
		{"no token", "GET", "/v1/environments", "", "", 401, "EAUTH"},
		{"unknown token", "GET", "/v1/environments", "tok-nobody-0123456789", "", 401, "EAUTH"},
		{"basic scheme", "GET", "/v1/environments", "", "", 401, "EAUTH"},
		{"read-only token cannot create", "POST", "/v1/environments", tokARead, `{"preset":"t"}`, 403, "EPERM"},
		{"read-only token can list", "GET", "/v1/environments", tokARead, "", 200, ""},
		{"admin implies every scope", "POST", "/v1/environments", tokA, `{"preset":"t"}`, 201, ""},
		{"healthz needs no token", "GET", "/healthz", "", "", 200, ""},
		{"metrics need admin", "GET", "/metrics", tokB, "", 403, "EPERM"},
		{"metrics with admin", "GET", "/metrics", tokA, "", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.name == "basic scheme" {
				hdr = []string{"Authorization", "Basic " + tokA}
			}
			st, hd, body := h.do(tc.method, tc.path, tc.token, []byte(tc.body), hdr...)
			if st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, body)
			}
			if tc.code != "" {
				if e := envelopeOf(t, body); e.Code != tc.code {
					t.Fatalf("code %s, want %s", e.Code, tc.code)
				}
			}
			if st == 401 && !strings.HasPrefix(hd.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without a Bearer challenge: %v", hd)
			}
		})
	}
	// Tokens never reach the log, whether accepted or refused.
	for _, tok := range []string{tokA, tokARead, tokB, "tok-nobody-0123456789"} {
		if strings.Contains(h.log.String(), tok) {
			t.Fatalf("the log holds a token")
		}
	}
	if !strings.Contains(h.log.String(), "token=a-all") {
		t.Fatalf("the log does not name the token that was used:\n%s", h.log)
	}
}

// TestTenantIsolation: another tenant's environment, process and artifact answer
// exactly like missing ones (same status, same body), for every route.
func TestTenantIsolation(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t", Labels: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteFile(ctx, e.ID, "f.txt", []byte("secret")); err != nil {
		t.Fatal(err)
	}
	art, err := a.Export(ctx, e.ID, "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	proc, err := a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/environments/%s", ""},
		{"DELETE", "/v1/environments/%s", ""},
		{"POST", "/v1/environments/%s/pause", ""},
		{"POST", "/v1/environments/%s/resume", ""},
		{"POST", "/v1/environments/%s/exec", `{"argv":["echo"]}`},
		{"POST", "/v1/environments/%s/processes", `{"argv":["echo"]}`},
		{"GET", "/v1/environments/%s/processes/" + proc + "/wait", ""},
		{"GET", "/v1/environments/%s/processes/" + proc + "/events", ""},
		{"POST", "/v1/environments/%s/processes/" + proc + "/stdin", "x"},
		{"POST", "/v1/environments/%s/processes/" + proc + "/signal", `{"signal":"KILL"}`},
		{"GET", "/v1/environments/%s/files?path=f.txt", ""},
		{"PUT", "/v1/environments/%s/files?path=f.txt", "pwned"},
		{"DELETE", "/v1/environments/%s/files?path=f.txt", ""},
		{"GET", "/v1/environments/%s/files/list?path=.", ""},
		{"GET", "/v1/environments/%s/files/stat?path=f.txt", ""},
		{"POST", "/v1/environments/%s/files/mkdir?path=d", ""},
		{"GET", "/v1/environments/%s/files/tar?path=.", ""},
		{"POST", "/v1/environments/%s/patch", `{"patch":"x"}`},
		{"POST", "/v1/environments/%s/str-replace", `{"path":"f.txt","old":"secret","new":"x"}`},
		{"GET", "/v1/environments/%s/diff", ""},
		{"POST", "/v1/environments/%s/artifacts", `{"path":"f.txt"}`},
	}
	for _, r := range routes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			foreign := strings.Replace(r.path, "%s", e.ID, 1)
			missing := strings.Replace(r.path, "%s", "env-999", 1)
			// Compare against the same request for a missing id of the same
			// length, so that the echoed id does not differ.
			missing = strings.Replace(missing, "env-999", strings.Repeat("z", len(e.ID)), 1)
			foreignMissingID := strings.Repeat("z", len(e.ID))
			st1, _, b1 := h.do(r.method, foreign, tokB, []byte(r.body))
			st2, _, b2 := h.do(r.method, missing, tokB, []byte(r.body))
			if r.method == "DELETE" && !strings.Contains(r.path, "files") {
				// Destroy is idempotent: both a missing and a foreign id succeed
				// for tenant b, and a's environment must survive.
				if st1 != st2 {
					t.Fatalf("destroy: %d vs %d", st1, st2)
				}
				if _, err := a.Get(ctx, e.ID); err != nil {
					t.Fatalf("tenant b destroyed tenant a's environment: %v", err)
				}
				return
			}
			if st1 != http.StatusNotFound || st2 != http.StatusNotFound {
				t.Fatalf("status %d (foreign) and %d (missing), want 404: %s", st1, st2, b1)
			}
			b1 = bytes.ReplaceAll(b1, []byte(e.ID), []byte(foreignMissingID))
			if !bytes.Equal(b1, b2) {
				t.Fatalf("bodies differ:\nforeign %s\nmissing %s", b1, b2)
			}
		})
	}
	t.Run("artifact", func(t *testing.T) {
		st1, _, b1 := h.do("GET", "/v1/artifacts/"+art.Ref, tokB, nil)
		fake := "sha256:" + strings.Repeat("0", 64)
		st2, _, b2 := h.do("GET", "/v1/artifacts/"+fake, tokB, nil)
		b1 = bytes.ReplaceAll(b1, []byte(art.Ref), []byte(fake))
		if st1 != 404 || st2 != 404 || !bytes.Equal(b1, b2) {
			t.Fatalf("artifact: %d %s vs %d %s", st1, b1, st2, b2)
		}
		if b, _, err := a.ReadArtifact(ctx, art.Ref, 0, 0); err != nil || string(b) != "secret" {
			t.Fatalf("owner cannot read its artifact: %q %v", b, err)
		}
	})
	t.Run("list", func(t *testing.T) {
		envs, err := h.client(tokB).List(ctx, nil)
		if err != nil || len(envs) != 0 {
			t.Fatalf("tenant b lists %v, %v", envs, err)
		}
		envs, err = a.List(ctx, map[string]string{"k": "v"})
		if err != nil || len(envs) != 1 || envs[0].ID != e.ID || envs[0].Owner.Tenant != "a" {
			t.Fatalf("tenant a lists %v, %v", envs, err)
		}
	})
	if f, err := a.ReadFile(ctx, e.ID, "f.txt", 0, 0); err != nil || string(f) != "secret" {
		t.Fatalf("tenant b changed tenant a's file: %q %v", f, err)
	}
}

func TestQuotas(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	// Memory quota 1200M, default memory 512M and workspace 64M: two
	// environments fit (1152M), a third, even of 1 byte of memory, does not; the
	// environment quota (3) is not reached first.
	for i := 0; i < 2; i++ {
		e, err := a.Create(ctx, client.CreateRequest{Preset: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if e.Limits.MemoryBytes != 512<<20 || e.Limits.WorkspaceBytes != 64<<20 {
			t.Fatalf("default memory or workspace not applied: %+v", e.Limits)
		}
	}
	_, err := a.Create(ctx, client.CreateRequest{Preset: "t", Limits: client.Limits{MemoryBytes: 1}})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "EQUOTA" || ce.Status != 429 || ce.Retryable {
		t.Fatalf("over the memory quota: %v", err)
	}
	envs, _ := a.List(ctx, nil)
	if err := a.Destroy(ctx, envs[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, client.CreateRequest{Preset: "t", Limits: client.Limits{MemoryBytes: 256 << 20}}); err != nil {
		t.Fatalf("after a destroy the quota has room: %v", err)
	}
	if _, err := a.Create(ctx, client.CreateRequest{Preset: "t", Limits: client.Limits{MemoryBytes: 100 << 20}}); err != nil {
		t.Fatalf("third environment within memory: %v", err)
	}
	_, err = a.Create(ctx, client.CreateRequest{Preset: "t", Limits: client.Limits{MemoryBytes: 1 << 20}})
	if !client.IsCode(err, "EQUOTA") || !strings.Contains(err.Error(), "3 of 3 environments") {
		t.Fatalf("over the environment quota: %v", err)
	}
}

// TestWorkspaceCountsAgainstMemoryQuota guards issue 10's finding 9: an
// environment could ask for any workspace_bytes, and its upper layer is RAM that
// the daemon's writes fill on the daemon's account (a 16 MiB environment held
// 287 MB). The workspace now counts against the tenant's memory quota and is
// capped per environment (limits.max_workspace).
func TestWorkspaceCountsAgainstMemoryQuota(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	_, err := a.Create(ctx, client.CreateRequest{Preset: "t", Limits: client.Limits{MemoryBytes: 16 << 20, WorkspaceBytes: 2 << 30}})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "EQUOTA" || !strings.Contains(ce.Message, "workspace 2147483648") {
		t.Fatalf("16M of memory and a 2G workspace under a 1200M quota: %v", err)
	}
	_, err = a.Create(ctx, client.CreateRequest{Preset: "t", Limits: client.Limits{WorkspaceBytes: 5 << 30}})
	if !client.IsCode(err, "EINVAL") || !strings.Contains(err.Error(), "maximum of 4294967296") {
		t.Fatalf("workspace over max_workspace: %v", err)
	}
	// A tenant without a memory quota is still bound by the per-environment cap.
	_, err = h.client(tokB).Create(ctx, client.CreateRequest{Preset: "t", Limits: client.Limits{WorkspaceBytes: 1 << 40}})
	if !client.IsCode(err, "EINVAL") {
		t.Fatalf("a 1T workspace: %v", err)
	}
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t", Limits: client.Limits{MemoryBytes: 16 << 20, WorkspaceBytes: 1 << 30}})
	if err != nil || e.Limits.WorkspaceBytes != 1<<30 {
		t.Fatalf("within the quota: %+v %v", e, err)
	}
	envs, _ := a.List(ctx, nil)
	if len(envs) != 1 {
		t.Fatalf("refused creates left %d environments", len(envs))
	}
}

// TestOutputCap guards issue 10's finding 10: output_total, the output a command
// may write to the daemon's disk (and leave as an artifact), was taken as given.
// Past limits.max_output_total (and output_limit past max_output_limit) a request
// is refused; unset, both get defaults within the caps.
func TestOutputCap(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []client.ExecRequest{
		{Argv: []string{"echo"}, OutputTotal: 1 << 40},
		{Argv: []string{"echo"}, OutputLimit: 100 << 20},
	} {
		_, err := a.Exec(ctx, e.ID, r)
		if !client.IsCode(err, "EINVAL") || !strings.Contains(err.Error(), "exceeds the server's maximum") {
			t.Errorf("exec %+v: %v", r, err)
		}
		if _, err := a.Start(ctx, e.ID, r); !client.IsCode(err, "EINVAL") {
			t.Errorf("start %+v: %v", r, err)
		}
	}
	if _, err := a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"echo"}}); err != nil {
		t.Fatal(err)
	}
	h.mem.mu.Lock()
	got := h.mem.lastExec
	h.mem.mu.Unlock()
	if got.OutputTotal != 64<<20 || got.OutputLimit != 1<<20 {
		t.Fatalf("defaults: output_total %d, output_limit %d", got.OutputTotal, got.OutputLimit)
	}
	// Caps below the runner's defaults lower the defaults too.
	h.srv.cfg.Limits.MaxOutputTotal, h.srv.cfg.Limits.MaxOutputLimit = 4<<20, 1<<10
	if _, err := a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"echo"}}); err != nil {
		t.Fatal(err)
	}
	h.mem.mu.Lock()
	got = h.mem.lastExec
	h.mem.mu.Unlock()
	if got.OutputTotal != 4<<20 || got.OutputLimit != 1<<10 {
		t.Fatalf("capped defaults: output_total %d, output_limit %d", got.OutputTotal, got.OutputLimit)
	}
}

func TestWorkspaceRoots(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sub := h.root + "/proj"
	mustMkdir(t, sub)
	for _, tc := range []struct {
		name, dir string
		token     string
		ok        bool
	}{
		{"under the root", sub, tokA, true},
		{"the root itself", h.root, tokA, true},
		{"outside", "/etc", tokA, false},
		{"dot-dot out", h.root + "/../", tokA, false},
		{"relative", "proj", tokA, false},
		{"symlink out of the root", symlinkTo(t, h.root, "/etc"), tokA, false},
		{"tenant without roots", sub, tokB, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.client(tc.token).Create(ctx, client.CreateRequest{Workspace: tc.dir})
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok && !client.IsCode(err, "EPERM") {
				t.Fatalf("want EPERM, got %v", err)
			}
			// The refusal names the configuration key that would allow it (issue
			// 13: it said "use a token with the needed scope").
			var ce *client.Error
			if !tc.ok && (!errors.As(err, &ce) || !strings.Contains(ce.Message, ".workspace_roots") ||
				!strings.Contains(ce.SuggestedAction, "workspace_roots") || strings.Contains(ce.SuggestedAction, "scope")) {
				t.Fatalf("refusal does not name workspace_roots: %v", err)
			}
		})
	}
}

func TestRequestLimits(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 1<<20+1)
	err = a.WriteFile(ctx, e.ID, "big", big)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 413 || ce.Code != "EFBIG" || !strings.Contains(ce.Message, "1048576") {
		t.Fatalf("raw body over the limit: %v", err)
	}
	if err := a.WriteFile(ctx, e.ID, "ok", big[:1<<20]); err != nil {
		t.Fatalf("raw body at the limit: %v", err)
	}
	_, err = a.ApplyPatch(ctx, e.ID, bytes.Repeat([]byte("y"), 64<<10))
	if !client.IsCode(err, "EFBIG") {
		t.Fatalf("JSON body over the limit: %v", err)
	}
	// A file over the service's read cap: EFBIG with a hint to read a range.
	if err := a.WriteFile(ctx, e.ID, "huge", append(big[:memReadCap], 'z')); err != nil {
		t.Fatal(err)
	}
	_, err = a.ReadFile(ctx, e.ID, "huge", 0, 0)
	if !errors.As(err, &ce) || ce.Code != "EFBIG" || !strings.Contains(ce.SuggestedAction, "offset and length") {
		t.Fatalf("read over the cap: %v", err)
	}
	b, err := a.ReadFile(ctx, e.ID, "huge", memReadCap, 10)
	if err != nil || string(b) != "z" {
		t.Fatalf("range read: %q %v", b, err)
	}
}

func TestBadRequests(t *testing.T) {
	h := newHarness(t)
	a := h.client(tokA)
	e, err := a.Create(context.Background(), client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	id := e.ID
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"unknown field", "POST", "/v1/environments/" + id + "/exec", `{"argv":["echo"],"timeout":5}`, 400, "EINVAL", "unknown field"},
		{"empty argv", "POST", "/v1/environments/" + id + "/exec", `{"argv":[]}`, 400, "EINVAL", "argv is empty"},
		{"negative timeout", "POST", "/v1/environments/" + id + "/exec", `{"argv":["x"],"timeout_seconds":-1}`, 400, "EINVAL", "non-negative"},
		{"not JSON", "POST", "/v1/environments", `nope`, 400, "EINVAL", "request body"},
		{"empty body", "POST", "/v1/environments", ``, 400, "EINVAL", "empty request body"},
		{"two values", "POST", "/v1/environments", `{"preset":"t"}{}`, 400, "EINVAL", "more than one"},
		{"no path", "GET", "/v1/environments/" + id + "/files", "", 400, "EINVAL", "path query parameter"},
		{"bad offset", "GET", "/v1/environments/" + id + "/files?path=a&offset=-1", "", 400, "EINVAL", "offset"},
		{"bad label", "GET", "/v1/environments?label=novalue", "", 400, "EINVAL", "label"},
		{"bad Last-Event-ID", "GET", "/v1/environments/" + id + "/processes/p1/events", "", 400, "EINVAL", "Last-Event-ID"},
		{"escape", "GET", "/v1/environments/" + id + "/files?path=../../etc/passwd", "", 403, "EPERM", "escapes"},
		{"missing file", "GET", "/v1/environments/" + id + "/files?path=nope", "", 404, "ENOENT", "nope"},
		{"unknown route", "GET", "/v1/nothing", "", 404, "ENOENT", "no such route"},
		{"wrong method", "PATCH", "/v1/environments", "", 405, "ENOENT", "not allowed"},
		{"both workspace and workspace preset", "POST", "/v1/environments", `{"preset":"t","workspace":"` + h.root + `"}`, 400, "EINVAL", "exactly one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.name == "bad Last-Event-ID" {
				hdr = []string{"Last-Event-ID", "abc"}
			}
			st, _, body := h.do(tc.method, tc.path, tokA, []byte(tc.body), hdr...)
			if st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, body)
			}
			e := envelopeOf(t, body)
			if e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("got %+v, want %s containing %q", e, tc.code, tc.msg)
			}
		})
	}
}

// TestInternalErrorsHideDetail: an unexpected error is a 500 whose message names the
// request id (to find the detail in the log) and no host path.
func TestInternalErrorsHideDetail(t *testing.T) {
	h := newHarness(t)
	a := h.client(tokA)
	e, err := a.Create(context.Background(), client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	st, hdr, body := h.do("GET", "/v1/environments/"+e.ID+"/files?path=boom", tokA, nil)
	if st != 500 {
		t.Fatalf("status %d: %s", st, body)
	}
	ee := envelopeOf(t, body)
	id := hdr.Get(requestIDHeader)
	if ee.Code != "EINTERNAL" || ee.Message != "internal error (request "+id+")" || strings.Contains(string(body), "/var/lib") {
		t.Fatalf("500 body %s", body)
	}
	if !strings.Contains(h.log.String(), "/var/lib/agentbox-test/envs/secret") || !strings.Contains(h.log.String(), id) {
		t.Fatalf("the detail is not in the log for the operator")
	}
}

func mustMkdir(t *testing.T, d string) {
	t.Helper()
	if err := mkdir(d); err != nil {
		t.Fatal(err)
	}
}
