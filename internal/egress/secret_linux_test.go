package egress_test

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/egress"
)

// The planted secret: it must reach api.test's origin and appear nowhere else.
const secretValue = "planted-real-secret-4c1d9e"

// secretFixture has a secret TOKEN for api.test and a secret OTHER for other.test;
// the sandbox knows only their placeholders.
func secretFixture(t *testing.T) (f *fixture, token, other string, c *http.Client) {
	t.Helper()
	token, _ = egress.NewPlaceholder("TOKEN")
	other, _ = egress.NewPlaceholder("OTHER")
	f = newFixture(t, withPolicy(func(p *egress.Policy) {
		p.Allow = []string{originName, secretName, otherName}
		p.Secrets = []egress.Secret{
			{Name: "TOKEN", Hosts: []string{secretName}, Placeholder: token, Value: secretValue},
			{Name: "OTHER", Hosts: []string{otherName + ":1"}, Placeholder: other, Value: "other-value"},
		}
	}))
	return f, token, other, f.client(t, roots(f))
}

// roots trusts the origin's CA (for tunnels) and the sandbox's (for interception).
func roots(f *fixture) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.origin.CAPEM)
	pool.AppendCertsFromPEM(f.proxy.CACertPEM())
	return pool
}

func do(t *testing.T, c *http.Client, method, url string, header http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b := new(strings.Builder)
	fmt.Fprint(b, resp.Header)
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	return resp.StatusCode, string(buf[:n]) + b.String()
}

// TestSecretInjected: the placeholder is replaced in the headers of requests to the
// secret's host only, over intercepted HTTPS; the origin receives the value and
// the sandbox sees only placeholders and the sandbox CA's certificate.
func TestSecretInjected(t *testing.T) {
	f, token, _, c := secretFixture(t)
	code, body := do(t, c, "GET", f.httpsURL(secretName, "/api"), http.Header{"Authorization": {"Bearer " + token}, "X-Both": {token + "," + token}}, "")
	if code != http.StatusOK || strings.Contains(body, secretValue) {
		t.Fatalf("%d %q", code, body)
	}
	reqs := f.origin.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+secretValue ||
		reqs[0].Header.Get("X-Both") != secretValue+","+secretValue || reqs[0].SNI != secretName {
		t.Fatalf("origin saw %+v", reqs)
	}
	f.proxy.Close()
	if e := f.waitEvent(t, func(e egress.Event) bool { return e.Host == secretName }); !e.Intercepted || e.Decision != egress.Allowed {
		t.Fatalf("event %+v", e)
	}
	assertNoSecret(t, f)
}

// TestSecretElsewhere: a placeholder sent anywhere its secret is not for is refused
// and recorded, wherever in the request it is; over plain HTTP not even its own
// host gets it. Inside an end-to-end tunnel the proxy cannot see it: the origin
// receives the placeholder, never the value.
func TestSecretElsewhere(t *testing.T) {
	f, token, other, c := secretFixture(t)
	big := strings.Repeat("a", 200<<10)
	for _, tc := range []struct {
		name, method, url string
		header            http.Header
		body              string
		reason            egress.Reason
	}{
		{"header, plain, other host", "GET", f.httpURL(originName, "/"), http.Header{"Authorization": {"Bearer " + token}}, "", egress.ReasonSecretElsewhere},
		{"header name", "GET", f.httpURL(originName, "/"), http.Header{"X-" + token: {"1"}}, "", egress.ReasonSecretElsewhere},
		{"query", "GET", f.httpURL(originName, "/?key="+token), nil, "", egress.ReasonSecretElsewhere},
		{"escaped path", "GET", f.httpURL(originName, "/"+strings.ReplaceAll(token, "-", "%2D")), nil, "", egress.ReasonSecretElsewhere},
		{"twice escaped path", "GET", f.httpURL(originName, "/"+url.PathEscape(strings.ReplaceAll(token, "-", "%2D"))), nil, "", egress.ReasonSecretElsewhere},
		{"upper case", "GET", f.httpURL(originName, "/"), http.Header{"X-Token": {strings.ToUpper(token)}}, "", egress.ReasonSecretElsewhere},
		{"body", "POST", f.httpURL(originName, "/upload"), nil, big + token + big, egress.ReasonSecretElsewhere},
		{"own host over plain HTTP", "GET", f.httpURL(secretName, "/"), http.Header{"Authorization": {"Bearer " + token}}, "", egress.ReasonSecretPlainHTTP},
		{"another secret's host, intercepted", "GET", f.httpsURL(secretName, "/"), http.Header{"Authorization": {"Bearer " + other}}, "", egress.ReasonSecretElsewhere},
		{"intercepted body", "POST", f.httpsURL(secretName, "/"), nil, big + other + big, egress.ReasonSecretElsewhere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.origin.Requests())
			code, body := do(t, c, tc.method, tc.url, tc.header, tc.body)
			if code != http.StatusForbidden || !strings.Contains(body, string(tc.reason)) {
				if code != 0 { // a refusal mid-body may reach the client as a broken connection
					t.Errorf("%d %q; want 403 %s", code, body[:min(len(body), 200)], tc.reason)
				}
			}
			f.waitEvent(t, func(e egress.Event) bool { return e.Reason == tc.reason && e.Decision == egress.Denied })
			for _, r := range f.origin.Requests()[before:] {
				// A refused upload may arrive cut short, and late: never with a placeholder.
				seen := string(r.Body) + fmt.Sprint(r.Header)
				if strings.Contains(seen, token) || strings.Contains(seen, other) {
					t.Errorf("origin received %s %s with a placeholder", r.Method, r.Path)
				}
				if r.Method == "GET" && tc.method == "GET" {
					t.Errorf("origin received %s %s", r.Method, r.Path)
				}
			}
		})
	}
	// Trailers come after the body, past every check: they are not carried.
	hp := hostPort(originName, f.origin.HTTP.Port())
	code, body := f.raw(t, "POST http://"+hp+"/trailer HTTP/1.1\r\nHost: "+hp+"\r\nTransfer-Encoding: chunked\r\nTrailer: X-Token\r\n\r\n"+
		"5\r\nhello\r\n0\r\nX-Token: "+token+"\r\n\r\n")
	if code != http.StatusOK {
		t.Fatalf("chunked POST with a trailer: %d %q", code, body)
	}
	for _, r := range f.origin.Requests() {
		if r.Path == "/trailer" && (string(r.Body) != "hello" || strings.Contains(fmt.Sprint(r.Trailer, r.Header), token)) {
			t.Errorf("origin received %q, trailer %v", r.Body, r.Trailer)
		}
	}
	// Through an end-to-end tunnel: invisible to the proxy, and harmless.
	if code, _ := do(t, c, "GET", f.httpsURL(originName, "/tunnel"), http.Header{"Authorization": {"Bearer " + token}}, ""); code != http.StatusOK {
		t.Fatalf("tunnel: %d", code)
	}
	var seen []string
	for _, r := range f.origin.Requests() {
		if r.Path == "/tunnel" {
			seen = append(seen, r.Header.Get("Authorization"))
		}
	}
	if len(seen) != 1 || seen[0] != "Bearer "+token {
		t.Fatalf("tunnel: origin saw %q", seen)
	}
	// Inside an intercepted tunnel every request must name the tunnel's host.
	tc, br := f.openTLSWith(t, secretName, roots(f))
	if code := request(t, tc, br, hostPort(otherName, f.origin.HTTPS.Port())); code != http.StatusForbidden {
		t.Errorf("request for %s inside the tunnel to %s: %d", otherName, secretName, code)
	}
	f.waitEvent(t, func(e egress.Event) bool { return e.Reason == egress.ReasonHostMismatch && e.Host == secretName })
	assertNoSecret(t, f)
}

// assertNoSecret searches everything the proxy hands out for the planted value.
func assertNoSecret(t *testing.T, f *fixture) {
	t.Helper()
	j, _ := json.Marshal(f.proxy.Log())
	var all strings.Builder
	all.Write(j)
	fmt.Fprintf(&all, "%+v %v", f.proxy.Log(), f.proxy.CACertPEM())
	if strings.Contains(all.String(), secretValue) {
		t.Fatalf("the secret value is in the proxy's log or CA")
	}
}
