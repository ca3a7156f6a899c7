package access

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/config"
)

const (
	tokA = "tok-a-0123456789abcdef"
	tokB = "tok-b-0123456789abcdef"
	tokR = "tok-r-0123456789abcdef"
)

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`
state_dir: /var/lib/agentbox-test
tenants:
  a: {}
  b: {}
  r: {rate: {per_second: 0.001, burst: 2}}
tokens:
  - {name: a-all, token: `+tokA+`, tenant: a, scopes: [admin]}
  - {name: b-exec, token: `+tokB+`, tenant: b, scopes: [exec]}
  - {name: r, token: `+tokR+`, tenant: r, scopes: [exec]}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestVerifyMatchesOnlyTheExactToken(t *testing.T) {
	a := NewAuth(testConfig(t))
	for _, tc := range []struct {
		tok    string
		tenant string
	}{
		{tokA, "a"}, {tokB, "b"}, {tokA + "x", ""}, {tokA[:len(tokA)-1], ""}, {"", ""}, {strings.ToUpper(tokA), ""},
	} {
		c, ok := a.Verify(tc.tok)
		if ok != (tc.tenant != "") || c.Tenant != tc.tenant {
			t.Errorf("Verify(%q) = %v %v, want tenant %q", tc.tok, c.Tenant, ok, tc.tenant)
		}
	}
}

// TestRequest: the Authorization header's bearer token (scheme in any case) names
// the caller; anything else is unauthenticated; a tenant past its burst is refused
// with its caller still named, for the log.
func TestRequest(t *testing.T) {
	a := NewAuth(testConfig(t))
	req := func(h string) *http.Request {
		r, _ := http.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		return r
	}
	for _, tc := range []struct {
		header, tenant string
		err            error
	}{
		{"Bearer " + tokA, "a", nil},
		{"bearer  " + tokB + " ", "b", nil},
		{"Basic " + tokA, "", ErrUnauthenticated},
		{tokA, "", ErrUnauthenticated},
		{"", "", ErrUnauthenticated},
	} {
		c, err := a.Request(req(tc.header))
		if err != tc.err || c.Tenant != tc.tenant {
			t.Errorf("%q: %+v %v, want tenant %q, %v", tc.header, c, err, tc.tenant, tc.err)
		}
	}
	for i := range 3 {
		c, err := a.Request(req("Bearer " + tokR))
		if want := error(nil); i == 2 {
			if err != ErrRate || c.Tenant != "r" {
				t.Fatalf("request %d past the burst: %+v %v", i, c, err)
			}
		} else if err != want {
			t.Fatalf("request %d within the burst: %v", i, err)
		}
	}
}

// TestHas: admin holds its tenant's scopes but not operator.
func TestHas(t *testing.T) {
	admin := Caller{Tenant: "a", Scopes: []string{config.ScopeAdmin}}
	if !admin.Has(config.ScopeExec) || !admin.Has(config.ScopeFileWrite) || admin.Has(config.ScopeOperator) {
		t.Fatal("admin's scopes")
	}
	reader := Caller{Tenant: "a", Scopes: []string{config.ScopeFileRead}}
	if reader.Has(config.ScopeFileWrite) || !reader.Has(config.ScopeFileRead) {
		t.Fatal("a reader's scopes")
	}
}
