package sessionapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/coordinator"
	"github.com/agentbox/agentbox/internal/wire/sse"
)

// TestHostileIDs (attack: session and request ids as paths, watermarks out of
// range). A session id is looked up among the sessions the host holds, never
// joined to a path, so ids that climb out of the state directory are 404 on
// every route; a Last-Event-ID or ?after= that is negative, overflows or is
// not a number is 400 naming it, before the session is looked up.
func TestHostileIDs(t *testing.T) {
	ts := newServer(t, "")
	a := "Bearer " + token
	for _, id := range []string{"..", "..%2F..%2Fetc", "%2e%2e%2f%2e%2e%2fsessions", "s-AAAA%00", "." + strings.Repeat("%2F..", 40)} {
		for _, route := range []string{"GET /v1/sessions/" + id, "GET /v1/sessions/" + id + "/events", "POST /v1/sessions/" + id + "/cancel",
			"GET /v1/sessions/" + id + "/approvals", "POST /v1/sessions/" + id + "/approvals/req_1/deny"} {
			method, path, _ := strings.Cut(route, " ")
			if st, body := do(t, ts, method, path, a, ""); st != 404 || strings.Contains(body, "EINTERNAL") {
				t.Errorf("%s: %d %s, want 404", route, st, body)
			}
		}
	}
	for _, v := range []string{"-1", "9223372036854775808", "1e3", "0x10", " 1 2"} {
		st, body := do(t, ts, "GET", "/v1/sessions/s-AAAAAAAAAAAAAAAA/events?after="+strings.ReplaceAll(v, " ", "%20"), a, "")
		if st != 400 || !strings.Contains(body, "non-negative integer") {
			t.Errorf("after=%q: %d %s, want 400", v, st, body)
		}
		r := httptest.NewRequest("GET", "/v1/sessions/s-AAAAAAAAAAAAAAAA/events?after=3", nil)
		r.Header.Set("Last-Event-ID", v)
		if n, err := sse.After(r); err == nil || !strings.Contains(err.Error(), "Last-Event-ID") {
			t.Errorf("Last-Event-ID %q: %d, %v; want refused naming it", v, n, err)
		}
	}
}

// sessionRoutes are the routes that name a session, with a body each accepts.
var sessionRoutes = [][3]string{
	{"GET", "", ""}, {"GET", "/events", ""}, {"GET", "/events?from=state", ""}, {"GET", "/approvals", ""},
	{"POST", "/approvals/req_1/approve", `{"scope":"suggested"}`}, {"POST", "/approvals/req_1/deny", ""},
	{"POST", "/calls/call_1/resolve", `{"as":"succeeded"}`}, {"POST", "/steer", `{"kind":"supplement","message":"rm -rf /"}`},
	{"POST", "/cancel", ""},
}

// create makes a session of the token's tenant and returns its id.
func create(t *testing.T, ts *httptest.Server, tok string) string {
	t.Helper()
	st, body := do(t, ts, "POST", "/v1/sessions", "Bearer "+tok, `{"goal":"x","policy":{"name":"scripted","mode":"good"},"environment":{"workspace":"/w"}}`)
	if st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	var i coordinator.Info
	if err := json.Unmarshal([]byte(body), &i); err != nil || i.ID == "" {
		t.Fatalf("create: %s (%v)", body, err)
	}
	return i.ID
}

// TestTenantBoundary (attack: tenant bob reads, steers, answers, resolves or
// cancels tenant alice's session, or learns that its id exists). On every
// route that names a session, bob's token with alice's session id gets the
// 404 an id that exists nowhere gets, byte for byte but the id (no existence
// oracle), and does nothing to the session: it is neither cancelled nor
// steered; bob's list does not show it; ids next to alice's are 404 for alice
// too (an id is looked up, never guessed into); the tokens sent in the query
// string, as some clients do, are not read (401), nor is alice's daemon token.
func TestTenantBoundary(t *testing.T) {
	ts := newServer(t, "")
	alice := create(t, ts, token)
	bobs := create(t, ts, tokenB)
	absent := "s-" + strings.Repeat("A", 16)
	if alice == absent {
		t.Fatal("the absent id exists")
	}
	for _, rt := range sessionRoutes {
		st, body := do(t, ts, rt[0], "/v1/sessions/"+alice+rt[1], "Bearer "+tokenB, rt[2])
		st0, body0 := do(t, ts, rt[0], "/v1/sessions/"+absent+rt[1], "Bearer "+tokenB, rt[2])
		if st != 404 || !strings.Contains(body, `"ENOENT"`) {
			t.Errorf("bob: %s %s on alice's session: %d %s, want 404", rt[0], rt[1], st, body)
		}
		if st0 != st || strings.ReplaceAll(body, alice, absent) != body0 {
			t.Errorf("bob: %s %s tells alice's session (%d %s) from an absent one (%d %s)", rt[0], rt[1], st, body, st0, body0)
		}
		for _, q := range []string{"?access_token=" + token, "?token=" + token, "?authorization=Bearer%20" + token} {
			path := "/v1/sessions/" + alice + rt[1]
			if strings.Contains(path, "?") {
				q = "&" + q[1:]
			}
			if st, body := do(t, ts, rt[0], path+q, "", rt[2]); st != 401 || !strings.Contains(body, `"EAUTH"`) {
				t.Errorf("%s %s with the token in the query (%s): %d %s, want 401", rt[0], rt[1], q, st, body)
			}
		}
		if st, _ := do(t, ts, rt[0], "/v1/sessions/"+alice+rt[1], "Bearer abx_alice_env_0123456789", rt[2]); st != 401 {
			t.Errorf("%s %s with alice's environment daemon token: %d, want 401", rt[0], rt[1], st)
		}
	}
	for _, q := range []string{"?access_token=" + token, "?token=" + token} {
		if st, _ := do(t, ts, "GET", "/v1/sessions"+q, "", ""); st != 401 {
			t.Errorf("GET /v1/sessions%s: %d, want 401", q, st)
		}
	}
	var list struct{ Sessions []coordinator.Info }
	_, body := do(t, ts, "GET", "/v1/sessions", "Bearer "+tokenB, "")
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Sessions) != 1 || list.Sessions[0].ID != bobs {
		t.Errorf("bob's list: %s, want only %s", body, bobs)
	}
	st, body := do(t, ts, "GET", "/v1/sessions/"+alice, "Bearer "+token, "")
	var i coordinator.Info
	if err := json.Unmarshal([]byte(body), &i); st != 200 || err != nil || i.State == coordinator.StateCancelled || i.State == coordinator.StateEnded {
		t.Errorf("alice's session after bob's attempts: %d %s, want it as it was", st, body)
	}
	for _, c := range "A2Z7" {
		guess := alice[:len(alice)-1] + string(c)
		if guess == alice || guess == bobs {
			continue
		}
		for _, tok := range []string{token, tokenB} {
			if st, _ := do(t, ts, "GET", "/v1/sessions/"+guess, "Bearer "+tok, ""); st != 404 {
				t.Errorf("a guessed id next to alice's, %s: %d, want 404", guess, st)
			}
		}
	}
	// Alice's own token still reaches it: the 404s above are the boundary's.
	if st, _ := do(t, ts, "POST", "/v1/sessions/"+alice+"/cancel", "Bearer "+token, ""); st != 200 {
		t.Errorf("alice cancelling her own session: %d", st)
	}
}

// TestSessionQuota (attack: a tenant holds every session the coordinator can
// drive). A tenant with quota.sessions N gets 429 EQUOTA, naming the quota,
// for a create past N sessions that have not ended; another tenant's creates
// are not counted against it nor refused by it; a cancelled session frees its
// place.
func TestSessionQuota(t *testing.T) {
	ts := newServer(t, "quota: {sessions: 2}")
	first := create(t, ts, token)
	create(t, ts, token)
	body := `{"goal":"x","policy":{"name":"scripted","mode":"good"},"environment":{"workspace":"/w"}}`
	if st, b := do(t, ts, "POST", "/v1/sessions", "Bearer "+token, body); st != 429 || !strings.Contains(b, `"EQUOTA"`) || !strings.Contains(b, "quota.sessions") {
		t.Fatalf("alice's third session: %d %s, want 429 naming quota.sessions", st, b)
	}
	for range 3 {
		create(t, ts, tokenB)
	}
	if st, b := do(t, ts, "POST", "/v1/sessions/"+first+"/cancel", "Bearer "+token, ""); st != 200 {
		t.Fatalf("cancel: %d %s", st, b)
	}
	create(t, ts, token)
	if st, _ := do(t, ts, "POST", "/v1/sessions", "Bearer "+token, body); st != 429 {
		t.Errorf("alice past her quota again: %d, want 429", st)
	}
}
