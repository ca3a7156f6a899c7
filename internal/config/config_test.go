package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const good = `
listen: 127.0.0.1:7070
workspace_presets: {py: /srv/presets/py}
shutdown: {grace: 5s}
limits: {request_bytes: 2M, default_memory: 256M, max_ttl: 1h, max_output_total: 16M, body_timeout: 5s, max_connections: 8, max_environments: 50, idle_pause: 10m}
artifacts: {ttl: 24h, max_bytes: 2G, gc_interval: 1m}
tenants:
  acme: {quota: {environments: 4, memory: 2G, artifact_bytes: 1G, artifacts: 100, snapshot_bytes: 3G}, workspace_roots: [/srv/work/acme/], rate: {per_second: 10, burst: 20},
         network: {allow: ["*.example.com", "preset:npm"], allow_private: [10.1.0.0/16]}, templates: {use: [python-pytest], build: ["go:1.22"]}}
  beta: {}
tokens:
  - {name: ci, sha256: %s, tenant: acme, task: t1, scopes: [exec, "file:read"]}
  - {token: beta-token-0123456789, tenant: beta, scopes: [admin]}
  - {file: tok.txt, tenant: beta, scopes: ["artifact:read"]}
`

func TestParse(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tok.txt"), []byte("file-token-0123456789\n"), 0o600)
	sum := sha256.Sum256([]byte("acme-token-0123456789"))
	c, err := Parse([]byte(strings.Replace(good, "%s", hex.EncodeToString(sum[:]), 1)), dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:7070" || c.SocketMode != "0600" ||
		time.Duration(c.Shutdown.Grace) != 5*time.Second || c.Limits.RequestBytes != 2<<20 ||
		c.Limits.JSONBytes != 8<<20 || c.Limits.DefaultMemory != 256<<20 || time.Duration(c.Limits.MaxTTL) != time.Hour {
		t.Fatalf("parsed %+v", c)
	}
	a := c.Tenants["acme"]
	if a.Quota.Environments != 4 || a.Quota.Memory != 2<<30 || a.Quota.ArtifactBytes != 1<<30 || a.Quota.Artifacts != 100 || a.Quota.SnapshotBytes != 3<<30 ||
		a.WorkspaceRoots[0] != "/srv/work/acme" || a.Rate.Burst != 20 || a.Network == nil || len(a.Network.Allow) != 2 ||
		a.Network.AllowPrivate[0].String() != "10.1.0.0/16" || c.Tenants["beta"].Network != nil ||
		c.WorkspacePresets["py"] != "/srv/presets/py" {
		t.Fatalf("tenant %+v", a)
	}
	if !a.Templates.MayBuild("go:1.22") || a.Templates.MayBuild("python-pytest") || !a.Templates.MayUse("python-pytest") || !a.Templates.MayUse("go:1.22") || a.Templates.MayUse("node") ||
		c.Tenants["beta"].Templates.MayUse("python-pytest") || c.Tenants["beta"].Templates.MayBuild("x") {
		t.Fatalf("templates %+v", a.Templates)
	}
	if l := Local("local-token-0123456789").Tenants["local"].Templates; !l.MayBuild("anything") || !l.MayUse("anything") {
		t.Fatalf("tenant %+v", a)
	}
	l := c.Limits
	if l.MaxOutputTotal != 16<<20 || l.MaxOutputLimit != 8<<20 || l.DefaultWorkspace != 1<<30 || l.MaxWorkspace != 4<<30 ||
		time.Duration(l.BodyTimeout) != 5*time.Second || l.MaxConnections != 8 || l.MaxEnvironments != 50 || time.Duration(l.IdlePause) != 10*time.Minute {
		t.Fatalf("limits %+v", l)
	}
	if ar := c.Artifacts; time.Duration(ar.TTL) != 24*time.Hour || ar.MaxBytes != 2<<30 || time.Duration(ar.GCInterval) != time.Minute {
		t.Fatalf("artifacts %+v", ar)
	}
	for i, secret := range []string{"acme-token-0123456789", "beta-token-0123456789", "file-token-0123456789"} {
		tk := c.Tokens[i]
		if tk.Digest != sha256.Sum256([]byte(secret)) {
			t.Errorf("token %d: wrong digest", i)
		}
		if tk.Token != "" || tk.SHA256 != "" || tk.File != "" {
			t.Errorf("token %d: secret kept after load: %+v", i, tk)
		}
	}
	if c.Tokens[1].Name != "token #2" || c.Tokens[0].Task != "t1" {
		t.Fatalf("names %+v", c.Tokens)
	}
}

func TestParseRejects(t *testing.T) {
	tok := "{token: abcdefghijklmnopqrstuvwxyz, tenant: a, scopes: [exec]}"
	for _, tc := range []struct{ name, yaml, msg string }{
		{"unknown field", "tenants: {a: {}}\ntokens: [" + tok + "]\nlisten_addr: x", "listen_addr"},
		{"no tokens", "tenants: {a: {}}", "no tokens"},
		{"unknown tenant", "tenants: {b: {}}\ntokens: [" + tok + "]", `tenant "a" is not configured`},
		{"unknown scope", "tenants: {a: {}}\ntokens: [{token: abcdefghijklmnopqrstuvwxyz, tenant: a, scopes: [root]}]", `unknown scope "root"`},
		{"no scopes", "tenants: {a: {}}\ntokens: [{token: abcdefghijklmnopqrstuvwxyz, tenant: a}]", "no scopes"},
		{"short token", "tenants: {a: {}}\ntokens: [{token: short, tenant: a, scopes: [exec]}]", "shorter than 16"},
		{"two secrets", "tenants: {a: {}}\ntokens: [{token: abcdefghijklmnopqrstuvwxyz, sha256: aa, tenant: a, scopes: [exec]}]", "exactly one"},
		{"bad digest", "tenants: {a: {}}\ntokens: [{sha256: abcd, tenant: a, scopes: [exec]}]", "64 hex digits"},
		{"duplicate", "tenants: {a: {}}\ntokens: [" + tok + ", " + tok + "]", "twice"},
		{"relative root", "tenants: {a: {workspace_roots: [work]}}\ntokens: [" + tok + "]", "must be absolute"},
		{"bad size", "limits: {request_bytes: lots}\ntenants: {a: {}}\ntokens: [" + tok + "]", "lots"},
		{"bad duration", "shutdown: {grace: forever}\ntenants: {a: {}}\ntokens: [" + tok + "]", "forever"},
		{"unknown shutdown key", "shutdown: {environments: keep}\ntenants: {a: {}}\ntokens: [" + tok + "]", "environments"},
		{"bad socket mode", "socket_mode: \"0666\"\ntenants: {a: {}}\ntokens: [" + tok + "]", "0600 or 0660"},
		{"negative quota", "tenants: {a: {quota: {environments: -1}}}\ntokens: [" + tok + "]", "negative"},
		{"negative artifact quota", "tenants: {a: {quota: {artifacts: -1}}}\ntokens: [" + tok + "]", "negative"},
		{"default workspace over the cap", "limits: {default_workspace: 2G, max_workspace: 1G}\ntenants: {a: {}}\ntokens: [" + tok + "]", "exceeds limits.max_workspace"},
		{"bad network host", "tenants: {a: {network: {allow: [\"*.com\"]}}}\ntokens: [" + tok + "]", "public suffix"},
		{"bad network prefix", "tenants: {a: {network: {allow_private: [10.1.2.3]}}}\ntokens: [" + tok + "]", "10.1.2.3"},
		{"old templates key", "templates: {py: /srv/py}\ntenants: {a: {}}\ntokens: [" + tok + "]", "now workspace_presets"},
		{"bad template name", "tenants: {a: {templates: {use: [Python]}}}\ntokens: [" + tok + "]", `templates: image name "Python"`},
		{"two builders", "tenants: {a: {templates: {build: [py]}}, b: {templates: {build: [py]}}}\ntokens: [" + tok + "]", `may both build template "py"`},
		{"star builder not alone", "tenants: {a: {templates: {build: [\"*\"]}}, b: {templates: {use: [py]}}}\ntokens: [" + tok + "]", `no other tenant may have templates`},
		{"bad build prefix", "builds: {allow_private: [10.1.2.3/8]}\ntenants: {a: {}}\ntokens: [" + tok + "]", "builds.allow_private"},
		{"empty CA file", "builds: {ca_files: [\"\"]}\ntenants: {a: {}}\ntokens: [" + tok + "]", "builds.ca_files[0]"},
		{"negative connections", "limits: {max_connections: -1}\ntenants: {a: {}}\ntokens: [" + tok + "]", "negative"},
		{"negative max environments", "limits: {max_environments: -1}\ntenants: {a: {}}\ntokens: [" + tok + "]", "limits.max_environments -1 is negative"},
		{"negative idle pause", "limits: {idle_pause: -1m}\ntenants: {a: {}}\ntokens: [" + tok + "]", "negative duration"},
		{"empty pool", "pools: [{}]\ntenants: {a: {}}\ntokens: [" + tok + "]", "pools[0]: set min"},
		{"pool max below min", "pools: [{min: 4, max: 2}]\ntenants: {a: {}}\ntokens: [" + tok + "]", "max 2 is below min 4"},
		{"negative pool", "pools: [{min: -1}]\ntenants: {a: {}}\ntokens: [" + tok + "]", "must not be negative"},
		{"pool preset", "pools: [{min: 1, preset: py}]\ntenants: {a: {}}\ntokens: [" + tok + "]", `no workspace preset "py"`},
		{"pool ttl", "pools: [{min: 1, ttl: 1h}]\ntenants: {a: {}}\ntokens: [" + tok + "]", "ttl is for pools with network"},
		{"pool workspace", "pools: [{min: 1, workspace: rel}]\ntenants: {a: {}}\ntokens: [" + tok + "]", "must be absolute"},
		{"pool too big", "pools: [{min: 1, workspace_size: 8G}]\ntenants: {a: {}}\ntokens: [" + tok + "]", "exceeds limits.max_workspace"},
		{"pool key", "pools: [{min: 1, size: 3}]\ntenants: {a: {}}\ntokens: [" + tok + "]", "size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want one containing %q", err, tc.msg)
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("not ErrConfig: %v", err)
			}
			if strings.Contains(err.Error(), "abcdefghijklmnopqrstuvwxyz") {
				t.Fatalf("the error shows a token: %v", err)
			}
		})
	}
}

func TestLocalToken(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run", "agentbox.token")
	if tok, err := ReadLocalToken(p); tok != "" || err != nil {
		t.Fatalf("missing file: %q %v", tok, err)
	}
	tok, err := NewLocalToken(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v %v", fi.Mode(), err)
	}
	if got, err := ReadLocalToken(p); got != tok || err != nil || len(tok) < 32 {
		t.Fatalf("read back %q %v", got, err)
	}
	tok2, _ := NewLocalToken(p)
	if tok2 == tok {
		t.Fatal("a new token equals the old one")
	}
	c := Local(tok2)
	if len(c.Tokens) != 1 || c.Tokens[0].Digest != sha256.Sum256([]byte(tok2)) || c.Tokens[0].Tenant != "local" {
		t.Fatalf("local config %+v", c.Tokens)
	}
}

func TestDefaultSocket(t *testing.T) {
	t.Setenv("AGENTBOX_SOCKET", "/x/y.sock")
	if DefaultSocket() != "/x/y.sock" {
		t.Fatal("AGENTBOX_SOCKET ignored")
	}
	t.Setenv("AGENTBOX_SOCKET", "")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	want := "/run/user/1000/agentbox.sock"
	if os.Geteuid() == 0 {
		want = "/run/agentbox/agentbox.sock"
	}
	if got := DefaultSocket(); got != want {
		t.Fatalf("DefaultSocket() = %q, want %q", got, want)
	}
}

func TestParseOrigins(t *testing.T) {
	tok := "{token: abcdefghijklmnopqrstuvwxyz, tenant: a, scopes: [exec]}"
	c, err := Parse([]byte("mcp: {allowed_origins: [\"https://App.Example.com:8443\", \"http://localhost:3000\"]}\ntenants: {a: {}}\ntokens: ["+tok+"]"), "")
	if err != nil || c.MCP.AllowedOrigins[0] != "https://app.example.com:8443" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, o := range []string{"app.example.com", "https://app.example.com/", "ftp://x", "https://app.example.com/path", "*"} {
		_, err := Parse([]byte("mcp: {allowed_origins: [\""+o+"\"]}\ntenants: {a: {}}\ntokens: ["+tok+"]"), "")
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "is not an origin") {
			t.Errorf("%q: %v", o, err)
		}
	}
}

// The example config init writes must parse as it is, with every commented key
// uncommented too (a key renamed in Config and not in the example fails here).
func TestExampleParses(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "my home")
	if err := os.WriteFile(filepath.Join(dir, "agentbox.token"), []byte("abx_0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ex := Example(home)
	c, err := Parse([]byte(ex), dir)
	if err != nil {
		t.Fatalf("example does not parse: %v\n%s", err, ex)
	}
	if got := c.Tenants["local"].WorkspaceRoots; len(got) != 1 || got[0] != home {
		t.Fatalf("workspace_roots = %q, want [%q]", got, home)
	}
	if !strings.Contains(ex, "$XDG_STATE_HOME/agentbox") || strings.Contains(ex, "{home}") {
		t.Errorf("the home directory replaced more, or less, than workspace_roots' placeholder:\n%s", ex)
	}
	if len(c.Tokens) != 1 || c.Tokens[0].Digest != sha256.Sum256([]byte("abx_0123456789abcdef0123")) {
		t.Fatalf("token not read from agentbox.token: %+v", c.Tokens)
	}
	// Uncomment every "# key: value" and "#   - item" line (not the prose) and parse again.
	key := regexp.MustCompile(`^(\s*)# (\s*([a-z_]+:( |$)|- ).*?)(\s+# .*)?$`)
	var lines []string
	for _, l := range strings.Split(ex, "\n") {
		lines = append(lines, key.ReplaceAllString(l, "$1$2"))
	}
	full := strings.Join(lines, "\n")
	c2, err := Parse([]byte(full), dir)
	if err != nil {
		t.Fatalf("example with every key uncommented does not parse: %v\n%s", err, full)
	}
	if c2.WorkspacePresets["python"] == "" || len(c2.Tenants["local"].Templates.Use) != 1 || len(c2.Tenants["local"].MountRoots) != 1 || c2.Limits.MaxConnections != 256 ||
		c2.SocketMode != "0600" || c2.Listen == "" || len(c2.Tenants["local"].Network.AllowPrivate) != 1 {
		t.Fatalf("uncommented keys not read: %+v\n%s", c2, full)
	}
	if len(c2.Pools) != 3 || c2.Pools[0].WorkspaceBytes != c2.Limits.DefaultWorkspace || c2.Pools[1].Memory != 1<<30 || !c2.Pools[2].Network {
		t.Fatalf("pools: %+v", c2.Pools)
	}
}

func TestLocalWorkspaceRoots(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(filepath.Join(home))
	if got := LocalWorkspaceRoots(); len(got) != 1 || got[0] != home {
		t.Fatalf("cwd inside home: %q, want [%q]", got, home)
	}
	other := t.TempDir()
	t.Chdir(other)
	if got := LocalWorkspaceRoots(); len(got) != 2 || got[0] != home || got[1] != other {
		t.Fatalf("cwd outside home: %q", got)
	}
	// A home or working directory of "/" would allow every file: never a root.
	t.Setenv("HOME", "/")
	t.Chdir("/")
	if got := LocalWorkspaceRoots(); len(got) != 0 {
		t.Fatalf("\"/\" became a root: %q", got)
	}
	c := Local("local-token-0123456789", home)
	if r := c.Tenants["local"]; len(r.WorkspaceRoots) != 1 || len(r.MountRoots) != 0 {
		t.Fatalf("Local roots %+v", r)
	}
}

// TestParseBuilds: builds' prefixes are read as prefixes, relative CA files from
// the configuration's directory.
func TestParseBuilds(t *testing.T) {
	dir := t.TempDir()
	c, err := Parse([]byte("builds: {allow_private: [203.0.113.80/32], ca_files: [site.crt, /etc/site.crt]}\ntenants: {a: {}}\n"+
		"tokens: [{token: abcdefghijklmnopqrstuvwxyz, tenant: a, scopes: [exec]}]"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Builds.AllowPrivate) != 1 || c.Builds.AllowPrivate[0].String() != "203.0.113.80/32" {
		t.Errorf("allow_private: %v", c.Builds.AllowPrivate)
	}
	if want := []string{filepath.Join(dir, "site.crt"), "/etc/site.crt"}; !slices.Equal(c.Builds.CAFiles, want) {
		t.Errorf("ca_files: %q, want %q", c.Builds.CAFiles, want)
	}
}
