package sessionapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/wire/sse"
)

// TestHostileIDs (attack: session and request ids as paths, watermarks out of
// range). A session id is looked up among the sessions the host holds, never
// joined to a path, so ids that climb out of the state directory are 404 on
// every route; a Last-Event-ID or ?after= that is negative, overflows or is
// not a number is 400 naming it, before the session is looked up.
func TestHostileIDs(t *testing.T) {
	ts := newServer(t)
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
