package egress_test

import (
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/egress"
)

// The .env a tainted session read: one value of a known shape, one only the
// session's read values can name.
const (
	scanKey   = "AKIA" + "IOSFODNN7EXAMPLQ"
	scanValue = "Zk3xP9qLm2Vw8Rt5"
	scanEnv   = "AWS_ACCESS_KEY_ID=" + scanKey + "\nDB_PASSWORD=" + scanValue + "\n"
)

func scanFixture(t *testing.T, on bool, maxBody int64) (*fixture, *http.Client) {
	t.Helper()
	f := newFixture(t, withPolicy(func(p *egress.Policy) {
		p.Scan = egress.Scan{On: on, MaxBody: maxBody, Values: []string{scanValue}}
	}))
	return f, f.client(t, roots(f))
}

// chunked is a body of unknown length: the client sends it chunked.
type chunked struct{ io.Reader }

// TestScanStopsSecrets: with Scan on, a request carrying the .env (or one value
// of it alone) in its body, a header, the query or a chunked body is refused over
// plain HTTP and HTTPS, the origin receives nothing, and the event names the rule,
// never the secret.
func TestScanStopsSecrets(t *testing.T) {
	f, c := scanFixture(t, true, 0)
	for _, u := range []string{f.httpURL(originName, "/upload"), f.httpsURL(originName, "/upload")} {
		for _, tc := range []struct {
			name   string
			req    func() *http.Request
			detail string
		}{
			{"body", func() *http.Request {
				r, _ := http.NewRequest("POST", u, strings.NewReader(scanEnv))
				return r
			}, "in the body"},
			{"value alone in the body", func() *http.Request {
				r, _ := http.NewRequest("POST", u, strings.NewReader("x="+scanValue))
				return r
			}, "a value the session read in the body"},
			{"header", func() *http.Request {
				r, _ := http.NewRequest("GET", u, nil)
				r.Header.Set("X-Diag", scanValue)
				return r
			}, "in the request head"},
			{"query", func() *http.Request {
				r, _ := http.NewRequest("GET", u+"?k="+strings.ReplaceAll(scanKey, "A", "%41"), nil)
				return r
			}, "aws-access-key-id"},
			{"chunked", func() *http.Request {
				r, _ := http.NewRequest("POST", u, chunked{strings.NewReader(strings.Repeat("pad\n", 5000) + scanEnv)})
				return r
			}, "in the body"},
		} {
			before := len(f.proxy.Log())
			resp, err := c.Do(tc.req())
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Errorf("%s %s: %d", u, tc.name, resp.StatusCode)
				}
			}
			e := f.waitEvent(t, func(e egress.Event) bool { return e.Seq > uint64(before) && e.Decision == egress.Denied })
			if e.Reason != egress.ReasonSecretInRequest || !strings.Contains(e.Detail, tc.detail) ||
				strings.Contains(e.Detail, scanValue) || strings.Contains(e.Detail, scanKey) {
				t.Errorf("%s %s: event %+v", u, tc.name, e)
			}
			c.CloseIdleConnections()
		}
	}
	if reqs := f.origin.Requests(); len(reqs) != 0 {
		t.Fatalf("the origin received %d requests: %+v", len(reqs), reqs)
	}
}

// TestScanEncodedStopped: a value the session read, sent base64-encoded (after
// other base64, padded, over HTTPS) or hex-encoded in upper case in the query,
// is refused: the origin receives nothing, and the event names the encoding,
// never the value. (Before, a base64 copy of the .env passed.)
func TestScanEncodedStopped(t *testing.T) {
	f, c := scanFixture(t, true, 0)
	hexValue := strings.ToUpper(hex.EncodeToString([]byte(scanValue)))
	for _, tc := range []struct{ method, url, body, how string }{
		{"POST", f.httpsURL(originName, "/upload"), "ZW52PQ==" + base64.StdEncoding.EncodeToString([]byte(scanEnv)), "base64"},
		{"GET", f.httpURL(originName, "/q?d="+hexValue), "", "hex"},
	} {
		before := len(f.proxy.Log())
		if code, _ := do(t, c, tc.method, tc.url, nil, tc.body); code == http.StatusOK {
			t.Errorf("%s: %d", tc.how, code)
		}
		e := f.waitEvent(t, func(e egress.Event) bool { return e.Seq > uint64(before) && e.Decision == egress.Denied })
		if e.Reason != egress.ReasonSecretInRequest || !strings.Contains(e.Detail, tc.how+"-encoded") || strings.Contains(e.Detail, scanValue) {
			t.Errorf("%s: event %+v", tc.how, e)
		}
	}
	if n := len(f.origin.Requests()); n != 0 {
		t.Fatalf("the origin saw %d requests", n)
	}
}

// TestScanBodyBound: a body over MaxBody is refused, never passed on unread, and
// one under it (without a secret) arrives whole.
func TestScanBodyBound(t *testing.T) {
	f, c := scanFixture(t, true, 64<<10)
	for _, u := range []string{f.httpURL(originName, "/up"), f.httpsURL(originName, "/up")} {
		code, _ := do(t, c, "POST", u, nil, strings.Repeat("a", 64<<10+1))
		if code == http.StatusOK {
			t.Errorf("%s: a body over the bound passed", u)
		}
		if e := f.waitEvent(t, func(e egress.Event) bool { return e.Reason == egress.ReasonScanBodyTooLarge }); e.Decision != egress.Denied {
			t.Errorf("%s: %+v", u, e)
		}
		c.CloseIdleConnections()
		if code, body := do(t, c, "POST", u, nil, strings.Repeat("b", 64<<10)); code != http.StatusOK {
			t.Errorf("%s: a body at the bound: %d %s", u, code, body)
		}
	}
	for _, r := range f.origin.Requests() {
		if strings.Contains(string(r.Body), "a") || len(r.Body) != 64<<10 {
			t.Errorf("the origin got a body of %d bytes", len(r.Body))
		}
	}
	if n := len(f.origin.Requests()); n != 2 {
		t.Errorf("the origin got %d requests, want 2", n)
	}
}

// TestScanOffEndToEnd: without Scan the same .env goes through (the permission
// layer is the first line), and a tunnel stays end to end: not intercepted.
func TestScanOffEndToEnd(t *testing.T) {
	f, c := scanFixture(t, false, 0)
	code, _ := do(t, c, "POST", f.httpsURL(originName, "/upload"), nil, scanEnv)
	if code != http.StatusOK {
		t.Fatalf("%d", code)
	}
	c.CloseIdleConnections()
	if e := f.waitEvent(t, func(e egress.Event) bool { return e.Proto == "connect" }); e.Intercepted || e.Decision != egress.Allowed {
		t.Fatalf("%+v", e)
	}
}

// TestScanSetPolicy: turning Scan on with SetPolicy takes effect for the next
// request.
func TestScanSetPolicy(t *testing.T) {
	f, c := scanFixture(t, false, 0)
	pol := f.policy(originName)
	pol.Scan = egress.Scan{On: true}
	if err := f.proxy.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	if code, _ := do(t, c, "POST", f.httpURL(originName, "/upload"), nil, scanEnv); code == http.StatusOK {
		t.Fatal("passed after Scan was turned on")
	}
	if err := (egress.Policy{Scan: egress.Scan{MaxBody: -1}}).Validate(); err == nil || !strings.Contains(err.Error(), "scan.max_body") {
		t.Fatalf("Validate: %v", err)
	}
}

// TestScanCutsOpenTunnels: a tunnel opened end to end before Scan was turned on
// is cut by the SetPolicy that turns it on, so nothing keeps sending unread.
func TestScanCutsOpenTunnels(t *testing.T) {
	f, c := scanFixture(t, false, 0)
	if code, _ := do(t, c, "GET", f.httpsURL(originName, "/a"), nil, ""); code != http.StatusOK {
		t.Fatalf("%d", code)
	}
	pol := f.policy(originName)
	pol.Scan = egress.Scan{On: true}
	if err := f.proxy.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	e := f.waitEvent(t, func(e egress.Event) bool { return e.Proto == "connect" })
	if e.Reason != egress.ReasonPolicyChanged || e.Intercepted {
		t.Fatalf("%+v", e)
	}
	// The client's next request opens a new, intercepted, tunnel and is read.
	if code, _ := do(t, c, "POST", f.httpsURL(originName, "/b"), nil, scanEnv); code == http.StatusOK {
		t.Fatal("the .env passed")
	}
	if n := len(f.origin.Requests()); n != 1 {
		t.Fatalf("the origin got %d requests, want 1", n)
	}
}
