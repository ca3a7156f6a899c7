package sandbox

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/testenv/nethost"
)

// egressFixture is a test host with an origin named origin.test, a proxy whose
// policy reaches it by that name, and a workspace holding the origin's test CA.
type egressFixture struct {
	h     *nethost.Host
	o     *nethost.Origin
	proxy *egress.Proxy
	ws    string
}

func newEgressFixture(t *testing.T, pol egress.Policy) *egressFixture {
	t.Helper()
	fx := &egressFixture{h: nethost.New(t)}
	fx.o = nethost.StartOrigin(t, fx.h, "origin.test")
	pol.AllowPrivate = append(pol.AllowPrivate, fx.h.Prefix)
	pol.DNSOverride = map[string]netip.Addr{"origin.test": fx.h.Addr}
	var err error
	fx.proxy, err = egress.NewProxy(egress.Config{Policy: pol, UpstreamRoots: fx.o.Roots})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.proxy.Close() })
	fx.ws = t.TempDir()
	os.Chmod(fx.ws, 0o755)
	if err := os.WriteFile(filepath.Join(fx.ws, "origin-ca.pem"), fx.o.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

// paths returns the paths the origin received requests for.
func (fx *egressFixture) paths() []string {
	var out []string
	for _, r := range fx.o.Requests() {
		out = append(out, r.Path)
	}
	return out
}

// egressScript fetches the origin through the proxy over plain HTTP and through a
// tunnel, then directly by address with the proxy ignored (curl, and a plain
// socket that prints its errno), and prints each exit status. curl exits 7 when
// it cannot connect.
func (fx *egressFixture) egressScript() string {
	return fmt.Sprintf(`echo "proxy=$HTTPS_PROXY ca=$SSL_CERT_FILE"
curl -sS --max-time 30 http://origin.test:%d/plain; echo " plain=$?"
curl -sS --max-time 30 --cacert /workspace/origin-ca.pem https://origin.test:%d/tunnel; echo " tunnel=$?"
curl -sS --max-time 10 --noproxy '*' http://%[3]s/direct; echo " direct=$?"
python3 -c 'import socket; socket.create_connection(("%[4]s", %[5]d), 10)' 2>&1 | tail -1
`, fx.o.HTTP.Port(), fx.o.HTTPS.Port(), fx.o.HTTP, fx.o.HTTP.Addr(), fx.o.HTTP.Port())
}

// checkEgress asserts what egressScript must show: both fetches through the proxy
// arrived, the direct one found no route and never reached the origin.
func (fx *egressFixture) checkEgress(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{
		"proxy=http://127.0.0.1:3128 ca=" + "/etc/agentbox/ca-certificates.crt",
		fmt.Sprintf("origin origin.test:%d /plain plain=0", fx.o.HTTP.Port()),
		fmt.Sprintf("origin origin.test:%d /tunnel tunnel=0", fx.o.HTTPS.Port()),
		"direct=7",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "[Errno 101] Network is unreachable") {
		t.Errorf("the direct connection did not fail for want of a route:\n%s", out)
	}
	if got := fx.paths(); strings.Join(got, " ") != "/plain /tunnel" {
		t.Errorf("the origin received %q, want /plain and /tunnel", got)
	}
	var allowed int
	for _, e := range fx.proxy.Log() {
		if e.Decision == egress.Allowed && e.Host == "origin.test" {
			allowed++
		}
	}
	if allowed != 2 {
		t.Errorf("proxy log has %d allowed connections to origin.test, want 2: %+v", allowed, fx.proxy.Log())
	}
}

// TestNetworkEgress: a sandbox with a Network reaches an allowed host through
// its proxy, over plain HTTP and a CONNECT tunnel, by name; with the proxy
// ignored it reaches nothing (no route), in a one-shot and a persistent sandbox.
func TestNetworkEgress(t *testing.T) {
	t.Run("oneshot", func(t *testing.T) {
		fx := newEgressFixture(t, egress.Policy{Allow: []string{"origin.test"}})
		r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", fx.egressScript()}, Env: []string{"PATH=/usr/bin:/bin"},
			Workspace: fx.ws, Network: &Network{Proxy: fx.proxy}})
		fx.checkEgress(t, r.stdout+r.stderr)
	})
	t.Run("persistent", func(t *testing.T) {
		fx := newEgressFixture(t, egress.Policy{Allow: []string{"origin.test"}})
		sb := startPersistent(t, Config{Workspace: fx.ws, Network: &Network{Proxy: fx.proxy}})
		out, _ := shIn(t, sb, fx.egressScript())
		fx.checkEgress(t, out)
	})
	t.Run("none", func(t *testing.T) {
		// The control: without a Network, the proxy port is closed and no
		// variable or trust store is set up.
		r := sh(t, `echo "proxy=$HTTPS_PROXY"; ls /etc/agentbox; curl -sS --max-time 10 http://127.0.0.1:3128/; echo " curl=$?"`)
		out := r.stdout + r.stderr
		for _, want := range []string{"proxy=\n", "No such file or directory", "curl=7"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestNetworkTrustStore: the sandbox's CA is in its trust store, where every
// client finds it without a flag: the system bundle (bound over) and the
// variables. With a secret for origin.test the proxy intercepts that host's TLS
// with the sandbox's CA, so each client below succeeds only if it trusts the CA;
// each sends the placeholder, and the origin receives the value instead.
func TestNetworkTrustStore(t *testing.T) {
	ph, err := egress.NewPlaceholder("TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	value := "real-" + fmt.Sprint(os.Getpid())
	fx := newEgressFixture(t, egress.Policy{Allow: []string{"origin.test"},
		Secrets: []egress.Secret{{Name: "TOKEN", Hosts: []string{"origin.test"}, Placeholder: ph, Value: value}}})
	url := fmt.Sprintf("https://origin.test:%d", fx.o.HTTPS.Port())
	script := fmt.Sprintf(`
curl -sS --max-time 30 -H "Authorization: Bearer $TOKEN" %[1]s/curl; echo " curl=$?"
python3 -c '
import os, urllib.request
req = urllib.request.Request("%[1]s/python", headers={"Authorization": "Bearer " + os.environ["TOKEN"]})
print(urllib.request.urlopen(req, timeout=30).read().decode(), "python=0")
'
git -c http.extraHeader="Authorization: Bearer $TOKEN" ls-remote %[1]s/git.git >/dev/null 2>&1; echo "git=$?"
node -e '
const http = require("http"), tls = require("tls");
const req = http.request({host: "127.0.0.1", port: 3128, method: "CONNECT", path: "origin.test:%[2]d",
  headers: {Host: "origin.test:%[2]d"}});
req.on("connect", (res, socket) => {
  const s = tls.connect({socket, servername: "origin.test"}, () => {
    s.write("GET /node HTTP/1.1\r\nHost: origin.test:%[2]d\r\nAuthorization: Bearer " + process.env.TOKEN + "\r\nConnection: close\r\n\r\n");
  });
  let out = ""; s.on("data", d => out += d); s.on("end", () => console.log(out.split("\r\n\r\n")[1], "node=0"));
  s.on("error", e => console.log("node error", e.message));
});
req.end();
'
cmp /etc/ssl/certs/ca-certificates.crt /etc/agentbox/ca-certificates.crt && echo bound=0
`, url, fx.o.HTTPS.Port())
	sb := startPersistent(t, Config{Workspace: fx.ws, Network: &Network{Proxy: fx.proxy}})
	e, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/sh", "-c", script},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "TOKEN=" + ph}})
	if err != nil {
		t.Fatal(err)
	}
	e.finish(t)
	out := e.stdout.String() + e.stderr.String()
	for _, want := range []string{"/curl curl=0", "/python python=0", "git=", "/node node=0", "bound=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	got := map[string]string{}
	for _, r := range fx.o.Requests() {
		got[r.Path] = r.Header.Get("Authorization")
	}
	for _, p := range []string{"/curl", "/python", "/git.git/info/refs", "/node"} {
		if got[p] != "Bearer "+value {
			t.Errorf("origin got Authorization %q for %s, want the secret's value (requests: %v)", got[p], p, got)
		}
	}
	if strings.Contains(out, value) {
		t.Errorf("the secret's value reached the sandbox:\n%s", out)
	}
	// The CA in the sandbox is the proxy's, and the bundle still holds the host's.
	ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			t.Skip("the host's bundle holds no certificate")
		}
	}
	bundle, _ := shIn(t, sb, "cat /etc/agentbox/ca-certificates.crt")
	if !strings.Contains(bundle, strings.TrimSpace(string(fx.proxy.CACertPEM()))) {
		t.Errorf("the trust store lacks the proxy's CA")
	}
	if err == nil && !strings.HasPrefix(bundle, string(ca[:min(len(ca), 4096)])) {
		t.Errorf("the trust store does not begin with the host's bundle")
	}
	if regexp.MustCompile(`PRIVATE KEY`).MatchString(bundle) {
		t.Errorf("the trust store holds a private key")
	}
}

// TestNetworkPolicyAndProxyDeath: what the host does to a sandbox's proxy takes
// effect inside at once, and always closes: a policy that drops the allowed host
// refuses it and cuts a tunnel already open to it; an invalid policy refuses
// everything (an edit must not fail open); a closed proxy leaves the port
// refusing connections, and the sandbox with no way out at all (the proxy
// crashing is its listener closing with it).
func TestNetworkPolicyAndProxyDeath(t *testing.T) {
	allow := egress.Policy{Allow: []string{"origin.test"}}
	fx := newEgressFixture(t, allow)
	sb := startPersistent(t, Config{Workspace: fx.ws, Network: &Network{Proxy: fx.proxy}})
	get := func(path string) string {
		t.Helper()
		out, _ := shIn(t, sb, fmt.Sprintf(`curl -sS --max-time 30 http://origin.test:%d%s; echo " curl=$?"`, fx.o.HTTP.Port(), path))
		return out
	}
	pin := func(p egress.Policy) egress.Policy {
		p.AllowPrivate = []netip.Prefix{fx.h.Prefix}
		p.DNSOverride = map[string]netip.Addr{"origin.test": fx.h.Addr}
		return p
	}
	if out := get("/before"); !strings.Contains(out, "/before curl=0") {
		t.Fatalf("the allowed host is not reached: %s", out)
	}
	// A tunnel held open across the change: one request, then it waits for more.
	tunnel, err := execIn(t, sb, ExecConfig{Argv: []string{"python3", "-c", fmt.Sprintf(`
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128), 30)
s.sendall(b"CONNECT origin.test:%[1]d HTTP/1.1\r\nHost: origin.test:%[1]d\r\n\r\n")
assert s.recv(4096).startswith(b"HTTP/1.1 200"), "CONNECT refused"
t = ssl.create_default_context(cafile="/workspace/origin-ca.pem").wrap_socket(s, server_hostname="origin.test")
t.sendall(b"GET /tunnel HTTP/1.1\r\nHost: origin.test:%[1]d\r\n\r\n")
print(t.recv(4096).split(b"\r\n")[0].decode(), flush=True)
t.settimeout(60)
try:
    print("more", t.recv(4096))
except Exception as e:
    print("cut", type(e).__name__)
`, fx.o.HTTPS.Port())}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tunnel's request", func() bool { return slices.Contains(fx.paths(), "/tunnel") })
	if err := fx.proxy.SetPolicy(pin(egress.Policy{Allow: []string{"elsewhere.test"}})); err != nil {
		t.Fatal(err)
	}
	tunnel.finish(t)
	if out := tunnel.stdout.String() + tunnel.stderr.String(); !strings.Contains(out, "HTTP/1.1 200") || strings.Contains(out, "more b'H") {
		t.Errorf("the open tunnel was not cut by the policy that dropped its host: %s\nlog: %+v", out, fx.proxy.Log())
	}
	// The proxy closes the tunnel first and logs it when its copy ends, which
	// can be after the client saw the close.
	waitFor(t, "the cut tunnel in the proxy's log", func() bool { return cut(fx.proxy.Log()) })
	if out := get("/dropped"); !strings.Contains(out, "not_allowed") {
		t.Errorf("a host the new policy dropped: %s", out)
	}
	if err := fx.proxy.SetPolicy(pin(egress.Policy{Allow: []string{"origin.test", "*.com"}})); err == nil {
		t.Fatal("SetPolicy took a policy with *.com")
	}
	if out := get("/invalid"); !strings.Contains(out, "policy_invalid") {
		t.Errorf("after an invalid policy: %s", out)
	}
	if err := fx.proxy.SetPolicy(pin(allow)); err != nil {
		t.Fatal(err)
	}
	if out := get("/again"); !strings.Contains(out, "/again curl=0") {
		t.Errorf("the valid policy back: %s", out)
	}
	fx.proxy.Close()
	out, _ := shIn(t, sb, fmt.Sprintf(`curl -sS --max-time 10 http://origin.test:%d/closed; echo " curl=$?"
curl -sS --max-time 10 --noproxy '*' http://%s/closed-direct; echo " direct=$?"`, fx.o.HTTP.Port(), fx.o.HTTP))
	for _, want := range []string{"port 3128", "curl=7", "direct=7"} {
		if !strings.Contains(out, want) {
			t.Errorf("with the proxy closed, output lacks %q:\n%s", want, out)
		}
	}
	if got := strings.Join(fx.paths(), " "); got != "/before /tunnel /again" {
		t.Errorf("the origin received %q, want /before, /tunnel and /again only", got)
	}
}

// waitFor polls cond for up to a minute (the sandbox's traffic is asynchronous to
// the test, and the machine is loaded).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 600 {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// cut reports whether the log holds a tunnel to origin.test the proxy cut for a
// policy change.
func cut(log []egress.Event) bool {
	for _, e := range log {
		if e.Host == "origin.test" && e.Proto == "connect" && e.Reason == egress.ReasonPolicyChanged {
			return true
		}
	}
	return false
}
