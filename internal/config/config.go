package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/quantity"
)

// Scopes a token may grant.
const (
	ScopeEnvCreate    = "env:create"    // create and destroy environments
	ScopeExec         = "exec"          // run, signal and feed commands
	ScopeFileRead     = "file:read"     // read, list, stat, download, diff, export
	ScopeFileWrite    = "file:write"    // write, remove, mkdir, upload, patch, str_replace
	ScopeArtifactRead = "artifact:read" // read artifacts
	ScopeAdmin        = "admin"         // every scope but operator, and its tenant's /metrics
	ScopeOperator     = "operator"      // /metrics of every tenant and of the daemon itself
)

// AllScopes lists every scope.
var AllScopes = []string{ScopeEnvCreate, ScopeExec, ScopeFileRead, ScopeFileWrite, ScopeArtifactRead, ScopeAdmin, ScopeOperator}

// ErrConfig is matched by every error about the configuration's content.
var ErrConfig = errors.New("invalid configuration")

// Config is the whole server configuration. Zero fields take the defaults listed.
type Config struct {
	// Listen is a TCP address ("127.0.0.1:7070"); empty means the Unix socket.
	Listen string `yaml:"listen"`
	// Socket is the Unix socket path. Default: DefaultSocket().
	Socket string `yaml:"socket"`
	// SocketMode is the socket file's mode, "0600" (default) or "0660".
	SocketMode string `yaml:"socket_mode"`
	// StateDir is where environments keep their state. Default /var/lib/agentbox
	// as root, else $XDG_STATE_HOME/agentbox.
	StateDir string `yaml:"state_dir"`
	// WorkspacePresets maps names to host directories that an environment may
	// start its workspace from (the read-only lower layer of /workspace,
	// CreateRequest.preset). Not a template: a template is a root file system
	// (agentbox template build), which tenants' templates allow.
	WorkspacePresets map[string]string `yaml:"workspace_presets"`
	// OldTemplates is the key workspace_presets had before templates became
	// root file systems; a configuration that still sets it is refused.
	OldTemplates map[string]string `yaml:"templates"`
	// PublicMetrics serves every series of /metrics without a token; otherwise
	// "operator" sees every series and "admin" its own tenant's.
	PublicMetrics bool `yaml:"public_metrics"`

	// Builds say how the build steps of the templates the daemon builds (the
	// API's template builds) reach their registries.
	Builds Builds `yaml:"builds"`

	MCP       MCP               `yaml:"mcp"`
	Artifacts Artifacts         `yaml:"artifacts"`
	Shutdown  Shutdown          `yaml:"shutdown"`
	Limits    Limits            `yaml:"limits"`
	Tenants   map[string]Tenant `yaml:"tenants"`
	// Pools keep environments started ahead of creates, one pool per shape
	// (env.Pool); none by default.
	Pools  []Pool  `yaml:"pools"`
	Tokens []Token `yaml:"tokens"`
}

// Builds configure build sandboxes where a site reaches the registries
// through a mirror or a TLS interceptor on a private address, as
// `template build --allow-private` and `--ca-file` do for one build.
type Builds struct {
	// AllowPrivate are private or reserved prefixes the registries' names
	// (each step's preset's, and no other name) may resolve to.
	AllowPrivate []netip.Prefix `yaml:"allow_private"`
	// CAFiles are PEM files of certificates the steps with a network trust
	// besides their root's bundle (the interceptor's CA); relative paths are
	// read from the configuration file's directory. Read when the daemon starts.
	CAFiles []string `yaml:"ca_files"`
}

// MCP configures /mcp.
type MCP struct {
	// AllowedOrigins are the browser origins ("https://app.example.com") that
	// may use /mcp besides the daemon's own loopback ones; a request with any
	// other Origin header is refused. Programs send none.
	AllowedOrigins []string `yaml:"allowed_origins"`
}

// Artifacts bound the artifact store (exported files, truncated command
// outputs). Zero fields take package env's defaults: 168h, 8G, 10m.
type Artifacts struct {
	// TTL is how long an artifact is kept after it was stored.
	TTL Duration `yaml:"ttl"`
	// MaxBytes bounds the whole store: past it the oldest artifacts go.
	MaxBytes Size `yaml:"max_bytes"`
	// GCInterval is how often expired artifacts are collected.
	GCInterval Duration `yaml:"gc_interval"`
}

// Shutdown says how SIGTERM ends the server. Once requests have drained the
// environments end: kept for the next daemon or destroyed (serve --on-exit).
type Shutdown struct {
	// Grace is how long in-flight requests may take to finish. Default 30s.
	Grace Duration `yaml:"grace"`
}

// Limits bound requests and environments.
type Limits struct {
	// RequestBytes caps a raw request body (file write, tar upload). Default 64M.
	RequestBytes Size `yaml:"request_bytes"`
	// JSONBytes caps a JSON request body (a patch is one). Default 8M.
	JSONBytes Size `yaml:"json_bytes"`
	// DefaultMemory is an environment's memory limit when the request sets none
	// and its tenant has a memory quota. Default 512M.
	DefaultMemory Size `yaml:"default_memory"`
	// MaxMemory caps one environment's memory limit (0: no cap).
	MaxMemory Size `yaml:"max_memory"`
	// DefaultWorkspace is the size of an environment's private upper layer
	// when the request sets none. Default 1G.
	DefaultWorkspace Size `yaml:"default_workspace"`
	// MaxWorkspace caps one environment's upper layer. Default 4G. The layer
	// is RAM (a tmpfs), and what the daemon writes there for the API is
	// charged to the daemon, not to the environment's memory limit: tenants'
	// memory quotas count it.
	MaxWorkspace Size `yaml:"max_workspace"`
	// MaxTTL caps an environment's lifetime (0: no cap).
	MaxTTL Duration `yaml:"max_ttl"`
	// MaxEnvironments caps the live environments of every tenant together (0:
	// no cap); a fork counts all it would make before any starts.
	MaxEnvironments int `yaml:"max_environments"`
	// IdlePause pauses an environment after this long without a request when
	// its create asks for no idle_pause_seconds (0: never).
	IdlePause Duration `yaml:"idle_pause"`
	// MaxOutputTotal caps a command's output_total, the output (both streams)
	// after which it is killed; all of it is kept on disk while it runs and as
	// an artifact when truncated. Default 64M, also the default output_total.
	MaxOutputTotal Size `yaml:"max_output_total"`
	// MaxOutputLimit caps a command's output_limit, what of each stream the
	// result carries (and the daemon holds in memory). Default 8M.
	MaxOutputLimit Size `yaml:"max_output_limit"`
	// BodyTimeout is how long a request's body may take to arrive whole; a
	// slower one is cut off (408). The rest of the request (a long exec, an
	// event stream) is not bounded by it. Default 60s.
	BodyTimeout Duration `yaml:"body_timeout"`
	// MaxConnections caps the connections served at once; further ones wait
	// in the kernel's backlog until one closes. Default 256.
	MaxConnections int `yaml:"max_connections"`
}

// Tenant is what one tenant may use.
type Tenant struct {
	Quota Quota `yaml:"quota"`
	// WorkspaceRoots are the host directories under which this tenant may name a
	// workspace to create an environment from. Empty: presets only.
	WorkspaceRoots []string `yaml:"workspace_roots"`
	// MountRoots are the host directories under which this tenant may name a
	// mount's source (CreateRequest.mounts). Empty: no mounts.
	MountRoots []string `yaml:"mount_roots"`
	Rate       Rate     `yaml:"rate"`
	// Templates says which templates (root file systems in the image store)
	// this tenant's environments may use and whether it may build them.
	Templates TemplateAccess `yaml:"templates"`
	// Network bounds what this tenant's environments may reach (egress.Policy's
	// Within): the hosts, private prefixes and pins they ask for must fall inside
	// it. Nil: no network at all.
	Network *NetworkBound `yaml:"network"`
}

// TemplateAccess is what a tenant may do with templates. The zero value: none
// (its environments run on the host's system directories).
type TemplateAccess struct {
	// Use lists the templates its environments may start from; "*" is every
	// template in the store.
	Use []string `yaml:"use"`
	// Build lists the template names it may build from specs (replacing what
	// the name pointed at) and delete over the API; it may use them too. No
	// two tenants share a name here, and "*" (every name) is for a tenant that
	// is alone in having templates. A tenant using a name another may build
	// trusts that tenant with its environments' root file system.
	Build []string `yaml:"build"`
}

// MayUse reports whether the tenant may start environments from template name.
func (a TemplateAccess) MayUse(name string) bool {
	return slices.Contains(a.Use, "*") || slices.Contains(a.Use, name) || a.MayBuild(name)
}

// MayBuild reports whether the tenant may build and delete template name.
func (a TemplateAccess) MayBuild(name string) bool {
	return slices.Contains(a.Build, "*") || slices.Contains(a.Build, name)
}

// NetworkBound is the most a tenant's environments may allow.
type NetworkBound struct {
	// Allow lists host patterns and presets (as egress.Policy.Allow).
	Allow []string `yaml:"allow"`
	// AllowPrivate lists the private prefixes they may open, and where their
	// dns_override pins may point.
	AllowPrivate []netip.Prefix `yaml:"allow_private"`
	// Any lifts the bound (the local daemon's single tenant: the user runs it).
	Any bool `yaml:"any"`
}

// Policy is the bound as an egress policy, for egress.Policy.Within.
func (n *NetworkBound) Policy() egress.Policy {
	return egress.Policy{Allow: n.Allow, AllowPrivate: n.AllowPrivate}
}

// Pool is one warm pool: environments of one shape (template, workspace
// preset or directory, limits, network or none) kept started, of which a
// create of that shape claims one. Its limits must be those a create ends with
// after the server's defaults, which are filled in here as for a create:
// workspace_size 0 is limits.default_workspace, memory 0 is
// limits.default_memory with limits.max_memory set and otherwise the
// sandbox's default (a tenant with a memory quota gets default_memory: give it
// to serve that tenant), and a networked pool's ttl is capped by limits.max_ttl.
type Pool struct {
	Template       string   `yaml:"template"`
	Preset         string   `yaml:"preset"`
	Workspace      string   `yaml:"workspace"`
	Memory         Size     `yaml:"memory"`
	Pids           int64    `yaml:"pids"`
	CPUs           float64  `yaml:"cpus"`
	WorkspaceBytes Size     `yaml:"workspace_size"`
	Network        bool     `yaml:"network"`
	TTL            Duration `yaml:"ttl"`
	Min            int      `yaml:"min"`
	Max            int      `yaml:"max"`
	Idle           Duration `yaml:"idle"`
}

// Quota bounds a tenant's environments and artifacts at any time (0: unbounded).
type Quota struct {
	Environments int `yaml:"environments"`
	// Memory bounds the sum, over the tenant's environments, of each one's
	// memory limit and workspace size (its RAM-backed upper layer).
	Memory Size `yaml:"memory"`
	// ArtifactBytes and Artifacts bound what the tenant keeps in the artifact
	// store: the summed size and the number of its artifacts.
	ArtifactBytes Size `yaml:"artifact_bytes"`
	Artifacts     int  `yaml:"artifacts"`
	// SnapshotBytes bounds what the tenant's environment snapshots hold (their
	// sealed layers, each counted once until the last environment on it goes).
	SnapshotBytes Size `yaml:"snapshot_bytes"`
}

// Rate bounds a tenant's requests with a token bucket (0: unbounded).
type Rate struct {
	PerSecond float64 `yaml:"per_second"`
	Burst     int     `yaml:"burst"`
}

// Token grants a tenant and scopes to whoever presents it. Exactly one of SHA256,
// Token and File gives the secret; once loaded only Digest remains.
type Token struct {
	// Name identifies the token in logs (the secret never appears there).
	Name   string   `yaml:"name"`
	SHA256 string   `yaml:"sha256"` // hex SHA-256 of the token
	Token  string   `yaml:"token"`  // the token itself (prefer sha256)
	File   string   `yaml:"file"`   // a file holding the token
	Tenant string   `yaml:"tenant"`
	Task   string   `yaml:"task"` // fixes the task identity of everything made with it
	Scopes []string `yaml:"scopes"`

	Digest [sha256.Size]byte `yaml:"-"`
}

// Load reads and validates the configuration file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and validates a configuration; relative token files are taken
// from dir.
func Parse(b []byte, dir string) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.finish(dir); err != nil {
		return nil, err
	}
	return &c, nil
}

// Local is the configuration of a personal daemon: one tenant, "local", whose
// environments may start from a workspace under workspaceRoots (LocalWorkspaceRoots
// gives the default) and reach any network, and one token with every scope
// (operator too: the user runs the daemon); it may build and use every template. It
// allows no mounts: a mount may write to the host, a workspace never does.
func Local(token string, workspaceRoots ...string) *Config {
	c := &Config{Tenants: map[string]Tenant{"local": {Network: &NetworkBound{Any: true}, WorkspaceRoots: workspaceRoots,
		Templates: TemplateAccess{Build: []string{"*"}}}},
		Tokens: []Token{{Name: "local", Token: token, Tenant: "local", Scopes: AllScopes}}}
	if err := c.finish(""); err != nil {
		panic(err) // a literal configuration
	}
	return c
}

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
}

// finish checks the configuration, fills defaults and replaces secrets by digests.
func (c *Config) finish(dir string) error {
	if c.Socket == "" {
		c.Socket = DefaultSocket()
	}
	switch c.SocketMode {
	case "":
		c.SocketMode = "0600"
	case "0600", "0660":
	default:
		return bad("socket_mode %q: use 0600 or 0660", c.SocketMode)
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir()
	}
	if err := (egress.Policy{AllowPrivate: c.Builds.AllowPrivate}).Validate(); err != nil {
		return bad("builds.allow_private: %v", err)
	}
	for i, f := range c.Builds.CAFiles {
		if f == "" {
			return bad("builds.ca_files[%d]: empty; name a PEM file", i)
		}
		if !filepath.IsAbs(f) {
			c.Builds.CAFiles[i] = filepath.Join(dir, f)
		}
	}
	if c.Shutdown.Grace == 0 {
		c.Shutdown.Grace = Duration(30 * time.Second)
	}
	if c.Limits.RequestBytes == 0 {
		c.Limits.RequestBytes = 64 << 20
	}
	if c.Limits.JSONBytes == 0 {
		c.Limits.JSONBytes = 8 << 20
	}
	if c.Limits.DefaultMemory == 0 {
		c.Limits.DefaultMemory = 512 << 20
	}
	if c.Limits.DefaultWorkspace == 0 {
		c.Limits.DefaultWorkspace = 1 << 30
	}
	if c.Limits.MaxWorkspace == 0 {
		c.Limits.MaxWorkspace = 4 << 30
	}
	if c.Limits.DefaultWorkspace > c.Limits.MaxWorkspace {
		return bad("limits.default_workspace %d exceeds limits.max_workspace %d", c.Limits.DefaultWorkspace, c.Limits.MaxWorkspace)
	}
	if c.Limits.MaxOutputTotal == 0 {
		c.Limits.MaxOutputTotal = 64 << 20
	}
	if c.Limits.MaxOutputLimit == 0 {
		c.Limits.MaxOutputLimit = 8 << 20
	}
	if c.Limits.BodyTimeout == 0 {
		c.Limits.BodyTimeout = Duration(time.Minute)
	}
	if c.Limits.MaxEnvironments < 0 {
		return bad("limits.max_environments %d is negative", c.Limits.MaxEnvironments)
	}
	switch {
	case c.Limits.MaxConnections == 0:
		c.Limits.MaxConnections = 256
	case c.Limits.MaxConnections < 0:
		return bad("limits.max_connections %d is negative", c.Limits.MaxConnections)
	}
	for i, o := range c.MCP.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return bad("mcp.allowed_origins: %q is not an origin: write scheme://host[:port], e.g. https://app.example.com", o)
		}
		c.MCP.AllowedOrigins[i] = strings.ToLower(o)
	}
	if c.OldTemplates != nil {
		return bad("templates: this key is now workspace_presets (host directories an environment's /workspace starts from; create with preset: NAME); a template is now a root file system built with agentbox template build, which tenants.NAME.templates allows")
	}
	for name, dir := range c.WorkspacePresets {
		if !filepath.IsAbs(dir) {
			return bad("workspace preset %q: directory must be absolute", name)
		}
	}
	for name, t := range c.Tenants {
		if name == "" || strings.ContainsAny(name, "/\x00") {
			return bad("tenant name %q", name)
		}
		for i, r := range t.WorkspaceRoots {
			if !filepath.IsAbs(r) {
				return bad("tenant %q: workspace root %q must be absolute", name, r)
			}
			t.WorkspaceRoots[i] = filepath.Clean(r)
		}
		for _, n := range append(slices.Clone(t.Templates.Use), t.Templates.Build...) {
			if n != "*" {
				if err := image.CheckName(n); err != nil {
					return bad("tenant %q: templates: %v, or \"*\" for every template", name, err)
				}
			}
		}
		if n := t.Network; n != nil && !n.Any {
			if err := n.Policy().Validate(); err != nil {
				return bad("tenant %q: network: %v", name, err)
			}
		}
		for i, r := range t.MountRoots {
			if !filepath.IsAbs(r) {
				return bad("tenant %q: mount root %q must be absolute", name, r)
			}
			t.MountRoots[i] = filepath.Clean(r)
		}
		if t.Quota.Environments < 0 || t.Quota.Memory < 0 || t.Quota.ArtifactBytes < 0 || t.Quota.Artifacts < 0 ||
			t.Rate.PerSecond < 0 || t.Rate.Burst < 0 {
			return bad("tenant %q: negative quota or rate", name)
		}
	}
	for i := range c.Pools {
		if err := c.Pools[i].check(c, i); err != nil {
			return err
		}
	}
	if err := c.checkTemplateBuilders(); err != nil {
		return err
	}
	if err := loadTokens(c.Tokens, dir, func(name string) bool { _, ok := c.Tenants[name]; return ok }); err != nil {
		return err
	}
	for i := range c.Tokens {
		t := &c.Tokens[i]
		if len(t.Scopes) == 0 {
			return bad("%s: no scopes", t.Name)
		}
		for _, s := range t.Scopes {
			if !slices.Contains(AllScopes, s) {
				return bad("%s: unknown scope %q (known: %s)", t.Name, s, strings.Join(AllScopes, ", "))
			}
		}
	}
	return nil
}

// loadTokens names the unnamed tokens, turns their secrets into digests and
// checks that no token appears twice and that each names a tenant that is
// configured (tenant reports which are).
func loadTokens(tokens []Token, dir string, tenant func(string) bool) error {
	if len(tokens) == 0 {
		return bad("no tokens: nobody could use the server")
	}
	seen := map[[sha256.Size]byte]bool{}
	for i := range tokens {
		t := &tokens[i]
		if t.Name == "" {
			t.Name = fmt.Sprintf("token #%d", i+1)
		}
		if err := t.load(dir); err != nil {
			return err
		}
		if seen[t.Digest] {
			return bad("%s: the same token appears twice", t.Name)
		}
		seen[t.Digest] = true
		if !tenant(t.Tenant) {
			return bad("%s: tenant %q is not configured", t.Name, t.Tenant)
		}
	}
	return nil
}

// checkTemplateBuilders refuses two tenants that may build one name (either
// could replace the other's template), and "*" beside any other tenant with
// templates.
func (c *Config) checkTemplateBuilders() error {
	builder := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
		t := c.Tenants[name].Templates
		for _, n := range t.Build {
			if other, ok := builder[n]; ok {
				return bad("tenants %q and %q may both build template %q: give each name to one tenant (templates.build)", other, name, n)
			}
			builder[n] = name
		}
	}
	if all, ok := builder["*"]; ok {
		for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
			if t := c.Tenants[name].Templates; name != all && (len(t.Use) > 0 || len(t.Build) > 0) {
				return bad("tenant %q may build every template (templates.build: [\"*\"]), so no other tenant may have templates, but %q has", all, name)
			}
		}
	}
	return nil
}

// load turns the token's secret into its digest and forgets the secret.
func (t *Token) load(dir string) error {
	n := 0
	for _, s := range []string{t.SHA256, t.Token, t.File} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return bad("%s: set exactly one of sha256, token, file", t.Name)
	}
	switch {
	case t.SHA256 != "":
		b, err := hex.DecodeString(t.SHA256)
		if err != nil || len(b) != sha256.Size {
			return bad("%s: sha256 must be 64 hex digits", t.Name)
		}
		copy(t.Digest[:], b)
	case t.Token != "":
		if len(t.Token) < 16 {
			return bad("%s: token shorter than 16 characters", t.Name)
		}
		t.Digest = sha256.Sum256([]byte(t.Token))
	default:
		s, err := secretFile(t.File, dir, t.Name)
		if err != nil {
			return err
		}
		t.Digest = sha256.Sum256([]byte(s))
	}
	t.SHA256, t.Token, t.File = "", "", ""
	return nil
}

// secretFile reads the token in the file at p (relative to dir), trimmed of
// white space; what names it for an error.
func secretFile(p, dir, what string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrConfig, what, err)
	}
	s := strings.TrimSpace(string(b))
	if len(s) < 16 {
		return "", bad("%s: token in file shorter than 16 characters", what)
	}
	return s, nil
}

// Size is a byte count written like "512M" in YAML.
type Size int64

func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	var v string
	if err := n.Decode(&v); err != nil {
		return err
	}
	b, err := quantity.ParseSize(v)
	if err != nil {
		return err
	}
	*s = Size(b)
	return nil
}

// Duration is a time.Duration written like "30s" in YAML.
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var v string
	if err := n.Decode(&v); err != nil {
		return err
	}
	x, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	if x < 0 {
		return fmt.Errorf("negative duration %q", v)
	}
	*d = Duration(x)
	return nil
}

// check validates what the configuration alone can tell of pool i (the
// environment manager checks its preset, template and workspace) and fills
// in its workspace size.
func (p *Pool) check(c *Config, i int) error {
	switch {
	case p.Min < 0 || p.Max < 0:
		return bad("pools[%d]: min %d and max %d must not be negative", i, p.Min, p.Max)
	case p.Max == 0 && p.Min == 0:
		return bad("pools[%d]: set min (environments kept ready) and max (what a burst may grow it to)", i)
	case p.Max != 0 && p.Max < p.Min:
		return bad("pools[%d]: max %d is below min %d", i, p.Max, p.Min)
	case p.Preset != "" && p.Workspace != "":
		return bad("pools[%d]: give a preset or a workspace, not both", i)
	case p.Preset != "" && c.WorkspacePresets[p.Preset] == "":
		return bad("pools[%d]: no workspace preset %q in workspace_presets", i, p.Preset)
	case p.Workspace != "" && !filepath.IsAbs(p.Workspace):
		return bad("pools[%d]: workspace %q must be absolute", i, p.Workspace)
	case p.TTL != 0 && !p.Network:
		return bad("pools[%d]: ttl is for pools with network only (their proxy's CA lives ttl+1h); remove it", i)
	case p.Memory < 0 || p.Pids < 0 || p.CPUs < 0 || p.WorkspaceBytes < 0 || p.TTL < 0 || p.Idle < 0:
		return bad("pools[%d]: negative limit or duration", i)
	case c.Limits.MaxMemory > 0 && p.Memory > c.Limits.MaxMemory:
		return bad("pools[%d]: memory %d exceeds limits.max_memory", i, p.Memory)
	}
	// As the API fills in a create's (access.Guard.Create).
	if p.WorkspaceBytes == 0 {
		p.WorkspaceBytes = c.Limits.DefaultWorkspace
	}
	if p.Memory == 0 && c.Limits.MaxMemory > 0 {
		p.Memory = c.Limits.DefaultMemory
	}
	if max := c.Limits.MaxTTL; p.Network && max > 0 && (p.TTL == 0 || p.TTL > max) {
		p.TTL = max
	}
	if p.WorkspaceBytes > c.Limits.MaxWorkspace {
		return bad("pools[%d]: workspace_size %d exceeds limits.max_workspace %d", i, p.WorkspaceBytes, c.Limits.MaxWorkspace)
	}
	return nil
}
