package config

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Coordinator is the configuration of `agentbox coordinator serve`: its
// tenants, and the bearer tokens that name them as the daemon's do (Token;
// kept as digests once loaded). Each tenant's sessions reach the environment
// daemon with that tenant's own daemon token, so that one tenant's session
// cannot act in another's environments.
type Coordinator struct {
	Tenants map[string]CoordinatorTenant `yaml:"tenants"`
	Tokens  []Token                      `yaml:"tokens"`
}

// CoordinatorTenant is what one tenant of the coordinator may use.
type CoordinatorTenant struct {
	// EnvTokenFile is a file holding the environment daemon's token for this
	// tenant's sessions (relative paths: from the configuration file's
	// directory); no two tenants may share one. Required.
	EnvTokenFile string `yaml:"env_token_file"`
	// EnvToken is the token EnvTokenFile holds, once loaded.
	EnvToken string           `yaml:"-"`
	Quota    CoordinatorQuota `yaml:"quota"`
	Rate     Rate             `yaml:"rate"`
}

// CoordinatorQuota bounds a tenant's sessions (0: unbounded).
type CoordinatorQuota struct {
	// Sessions bounds the tenant's sessions that have not ended (running,
	// waiting, paused or failed): a create past it is refused.
	Sessions int `yaml:"sessions"`
}

// LocalCoordinatorTenant is the one tenant of a coordinator started without
// a configuration file (token and env token given by flags), and the tenant
// of the sessions a coordinator recorded before it had tenants.
const LocalCoordinatorTenant = "local"

// LocalCoordinator is the configuration of a coordinator with one tenant,
// "local": callers send token (at least 16 bytes), its sessions use envToken
// at the daemon.
func LocalCoordinator(token, envToken string) (*Coordinator, error) {
	c := &Coordinator{Tenants: map[string]CoordinatorTenant{LocalCoordinatorTenant: {EnvToken: envToken}},
		Tokens: []Token{{Name: LocalCoordinatorTenant, Token: token, Tenant: LocalCoordinatorTenant}}}
	if err := c.finish(""); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadCoordinator reads and validates the coordinator's configuration file.
func LoadCoordinator(path string) (*Coordinator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var c Coordinator
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %s: %w: %v", path, ErrConfig, err)
	}
	if err := c.finish(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &c, nil
}

// finish checks the configuration, reads the tenants' daemon tokens and
// replaces the callers' tokens by digests.
func (c *Coordinator) finish(dir string) error {
	if len(c.Tenants) == 0 {
		return bad("no tenants: configure one under tenants, with its env_token_file")
	}
	owner := map[[sha256.Size]byte]string{}
	for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
		t := c.Tenants[name]
		if name == "" || strings.ContainsAny(name, "/\x00") {
			return bad("tenant name %q", name)
		}
		if t.Quota.Sessions < 0 || t.Rate.PerSecond < 0 || t.Rate.Burst < 0 {
			return bad("tenant %q: negative quota or rate", name)
		}
		if t.EnvToken == "" {
			if t.EnvTokenFile == "" {
				return bad("tenant %q: env_token_file is required: a file holding the environment daemon's token of this tenant's environments", name)
			}
			s, err := secretFile(t.EnvTokenFile, dir, fmt.Sprintf("tenant %q: env_token_file", name))
			if err != nil {
				return err
			}
			t.EnvToken, t.EnvTokenFile = s, ""
		}
		d := sha256.Sum256([]byte(t.EnvToken))
		if other, ok := owner[d]; ok {
			return bad("tenants %q and %q have the same environment daemon token: each tenant's sessions need a daemon token of their own, or either could act in the other's environments", other, name)
		}
		owner[d] = name
		c.Tenants[name] = t
	}
	for i, t := range c.Tokens {
		if len(t.Scopes) > 0 || t.Task != "" {
			name := t.Name
			if name == "" {
				name = fmt.Sprintf("token #%d", i+1)
			}
			return bad("%s: a coordinator token grants its tenant's sessions, no scopes or task: remove scopes and task", name)
		}
	}
	if err := loadTokens(c.Tokens, dir, func(name string) bool { _, ok := c.Tenants[name]; return ok }); err != nil {
		return err
	}
	for _, t := range c.Tokens {
		if name, ok := owner[t.Digest]; ok {
			return bad("%s: the token is tenant %q's environment daemon token: give callers a token of their own", t.Name, name)
		}
	}
	return nil
}

// Rates returns each tenant's request rate, for access.NewTokenAuth.
func (c *Coordinator) Rates() map[string]Rate {
	r := map[string]Rate{}
	for name, t := range c.Tenants {
		r[name] = t.Rate
	}
	return r
}
