package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/testenv/nethost"
)

// TestEnvironmentNetwork: an environment created with a network reaches its allowed
// host through its proxy by name, from every command; SetNetwork takes effect for
// the next request; NetworkLog lists each connection once, owner only. Without a
// network there is no proxy to change or log, and nothing is reachable.
func TestEnvironmentNetwork(t *testing.T) {
	m := newManager(t, Config{})
	h := nethost.New(t)
	o := nethost.StartOrigin(t, h, "origin.test")
	n := &Network{Allow: []string{"origin.test"}, AllowPrivate: []netip.Prefix{h.Prefix},
		DNSOverride: map[string]netip.Addr{"origin.test": h.Addr, "other.test": h.Addr}}
	info := create(t, m, CreateOptions{Network: n})
	if info.Network == nil || info.Network.Allow[0] != "origin.test" {
		t.Errorf("Info.Network = %+v", info.Network)
	}
	ctx := context.Background()
	get := func(id, host, path string) string {
		t.Helper()
		res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"/bin/sh", "-c",
			fmt.Sprintf(`curl -sS --max-time 30 http://%s:%d%s; echo " curl=$?"`, host, o.HTTP.Port(), path)}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Stdout + res.Stderr
	}
	if out := get(info.ID, "origin.test", "/one"); !strings.Contains(out, "/one curl=0") {
		t.Errorf("the allowed host: %s", out)
	}
	if out := get(info.ID, "other.test", "/two"); !strings.Contains(out, "not_allowed") {
		t.Errorf("another host: %s", out)
	}
	if err := m.SetNetwork(ctx, alice, info.ID, Network{Allow: []string{"*.com"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetNetwork(*.com) = %v, want ErrInvalid", err)
	}
	if err := m.SetNetwork(ctx, bob, info.ID, Network{Allow: []string{"other.test"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob's SetNetwork = %v, want ErrNotFound", err)
	}
	swapped := Network{Allow: []string{"other.test"}, AllowPrivate: n.AllowPrivate, DNSOverride: n.DNSOverride}
	if err := m.SetNetwork(ctx, alice, info.ID, swapped); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Get(ctx, alice, info.ID); got.Network == nil || got.Network.Allow[0] != "other.test" {
		t.Errorf("Get after SetNetwork: %+v", got.Network)
	}
	if out := get(info.ID, "origin.test", "/three"); !strings.Contains(out, "not_allowed") {
		t.Errorf("the dropped host: %s", out)
	}
	if out := get(info.ID, "other.test", "/four"); !strings.Contains(out, "/four curl=0") {
		t.Errorf("the newly allowed host: %s", out)
	}
	var paths []string
	for _, r := range o.Requests() {
		paths = append(paths, r.Path)
	}
	if strings.Join(paths, " ") != "/one /four" { // checked before /five
		t.Errorf("the origin received %v, want /one and /four", paths)
	}
	log, err := m.NetworkLog(ctx, alice, info.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log {
		got = append(got, fmt.Sprintf("%s %s %s", e.Host, e.Decision, e.Reason))
	}
	if strings.Join(got, ", ") != "origin.test allow , other.test deny not_allowed, origin.test deny not_allowed, other.test allow " {
		t.Errorf("log %q", got)
	}
	if after, _ := m.NetworkLog(ctx, alice, info.ID, log[1].Seq); len(after) != 2 || after[0].Seq != log[2].Seq {
		t.Errorf("log after %d: %+v", log[1].Seq, after)
	}
	if _, err := m.NetworkLog(ctx, bob, info.ID, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob's NetworkLog = %v, want ErrNotFound", err)
	}

	// The stream: from the last logged connection on, the next one as it ends,
	// then the end of the stream when the environment goes.
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	stream, err := m.NetworkEvents(sctx, alice, info.ID, log[len(log)-1].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.NetworkEvents(ctx, bob, info.ID, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob's NetworkEvents = %v, want ErrNotFound", err)
	}
	get(info.ID, "other.test", "/five")
	select {
	case ev := <-stream:
		if ev.Seq != log[len(log)-1].Seq+1 || ev.Host != "other.test" || ev.Decision != egress.Allowed {
			t.Errorf("streamed %+v, want the /five connection", ev)
		}
	case <-time.After(time.Minute):
		t.Fatal("no event streamed for the connection")
	}
	if err := m.Destroy(ctx, alice, info.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-stream:
		if ok {
			t.Errorf("after Destroy the stream sent %+v", ev)
		}
	case <-time.After(time.Minute):
		t.Error("the stream did not end with the environment")
	}

	// Its limits: past MaxBytes every connection is cut.
	small := *n
	small.MaxBytes = 100
	limited := create(t, m, CreateOptions{Network: &small})
	get(limited.ID, "origin.test", "/big?"+strings.Repeat("x", 200))
	if log, err := m.NetworkLog(ctx, alice, limited.ID, 0); err != nil || len(log) != 1 || log[0].Reason != egress.ReasonByteLimit {
		t.Errorf("past max_bytes: %+v, %v", log, err)
	}

	plain := create(t, m, CreateOptions{})
	if err := m.SetNetwork(ctx, alice, plain.ID, *n); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetNetwork without a network = %v, want ErrInvalid", err)
	}
	if _, err := m.NetworkLog(ctx, alice, plain.ID, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("NetworkLog without a network = %v, want ErrInvalid", err)
	}
	if out := get(plain.ID, "origin.test", "/none"); !strings.Contains(out, "curl=") || strings.Contains(out, "curl=0") {
		t.Errorf("an environment without a network: %s", out)
	}
}

// TestEnvironmentSecret: an environment's secret (set at Create, in process) is a
// placeholder in every command's environment; the proxy swaps it for the value in
// requests to its host only, over intercepted HTTPS; a command may not set the
// variable itself; SetNetwork keeps the secret.
func TestEnvironmentSecret(t *testing.T) {
	h := nethost.New(t)
	o := nethost.StartOrigin(t, h, "origin.test")
	m := newManager(t, Config{EgressRoots: o.Roots})
	value := "env-secret-" + fmt.Sprint(time.Now().UnixNano())
	sec, err := egress.NewSecret("TOKEN", value, "origin.test")
	if err != nil {
		t.Fatal(err)
	}
	n := &Network{Allow: []string{"origin.test"}, AllowPrivate: []netip.Prefix{h.Prefix},
		DNSOverride: map[string]netip.Addr{"origin.test": h.Addr}, Secrets: []egress.Secret{sec}}
	info := create(t, m, CreateOptions{Network: n})
	ctx := context.Background()
	script := fmt.Sprintf(`echo "token=$TOKEN"; curl -sS --max-time 30 -H "Authorization: Bearer $TOKEN" https://origin.test:%d/secret; echo " curl=$?"`, o.HTTPS.Port())
	check := func(path string) {
		t.Helper()
		res, err := m.Exec(ctx, alice, info.ID, ExecRequest{Argv: []string{"/bin/sh", "-c", strings.ReplaceAll(script, "/secret", path)}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Stdout, "token="+sec.Placeholder) || !strings.Contains(res.Stdout, path+" curl=0") || strings.Contains(res.Stdout+res.Stderr, value) {
			t.Errorf("%s: %s%s", path, res.Stdout, res.Stderr)
		}
	}
	check("/secret")
	if err := m.SetNetwork(ctx, alice, info.ID, Network{Allow: []string{"origin.test"}, AllowPrivate: n.AllowPrivate, DNSOverride: n.DNSOverride}); err != nil {
		t.Fatal(err)
	}
	check("/after-set")
	got := map[string]string{}
	for _, r := range o.Requests() {
		got[r.Path] = r.Header.Get("Authorization")
	}
	for _, p := range []string{"/secret", "/after-set"} {
		if got[p] != "Bearer "+value {
			t.Errorf("%s reached the origin with Authorization %q, want the value", p, got[p])
		}
	}
	if _, err := m.Exec(ctx, alice, info.ID, ExecRequest{Argv: []string{"true"}, Env: []string{"TOKEN=mine"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a command setting TOKEN: %v, want ErrInvalid", err)
	}
	if b, _ := json.Marshal(info); strings.Contains(string(b), value) {
		t.Errorf("Info's JSON holds the value: %s", b)
	}
}

// TestScanStaysOn: once scanning is on (a tainted session turned it on), a later
// SetNetwork that says nothing of it (as the API's PUT …/network does) keeps it on
// with its values: a request carrying one is refused at the proxy and never
// reaches the origin, while an ordinary one passes.
func TestScanStaysOn(t *testing.T) {
	h := nethost.New(t)
	o := nethost.StartOrigin(t, h, "origin.test")
	m := newManager(t, Config{EgressRoots: o.Roots})
	n := Network{Allow: []string{"origin.test"}, AllowPrivate: []netip.Prefix{h.Prefix},
		DNSOverride: map[string]netip.Addr{"origin.test": h.Addr}}
	info := create(t, m, CreateOptions{Network: &n})
	ctx := context.Background()
	const value = "Zk3xP9qLm2Vw8Rt5-session-read-it"
	on := n
	on.Scan = egress.Scan{On: true, Values: []string{value}}
	if err := m.SetNetwork(ctx, alice, info.ID, on); err != nil {
		t.Fatal(err)
	}
	if err := m.SetNetwork(ctx, alice, info.ID, n); err != nil { // no scan named
		t.Fatal(err)
	}
	if got, err := m.Get(ctx, alice, info.ID); err != nil || !got.Network.Scan.On {
		t.Fatalf("scan after a SetNetwork without it: %+v, %v", got.Network, err)
	}
	send := func(path, body string) string {
		t.Helper()
		res, err := m.Exec(ctx, alice, info.ID, ExecRequest{Argv: []string{"curl", "-sS", "--max-time", "30", "-o", "/dev/null",
			"-w", "%{http_code}", "--data-binary", body, fmt.Sprintf("http://origin.test:%d%s", o.HTTP.Port(), path)}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Stdout
	}
	if code := send("/leak", "DB_PASSWORD="+value); code == "200" {
		t.Errorf("the secret was sent: HTTP %s", code)
	}
	if code := send("/ok", "hello"); code != "200" {
		t.Errorf("an ordinary request: HTTP %s", code)
	}
	for _, r := range o.Requests() {
		if r.Path == "/leak" || strings.Contains(string(r.Body), value) {
			t.Errorf("the origin received %s %q", r.Path, r.Body)
		}
	}
}
