package config

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadCoordinator: the coordinator's tenants and tokens load as the
// daemon's tokens do (digests only, files relative to the configuration), each
// tenant's daemon token is read from its file; a configuration that would let
// one tenant's sessions act as another's (two tenants on one daemon token, a
// caller token that is a daemon token), or that is incomplete, is refused
// naming what to fix.
func TestLoadCoordinator(t *testing.T) {
	dir := t.TempDir()
	for name, tok := range map[string]string{"a-env.token": "abx_a_env_0123456789abc", "b-env.token": "abx_b_env_0123456789abc", "a.token": "caller-a-0123456789abc",
		"short.token": "short"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func(yml string) (*Coordinator, error) {
		p := filepath.Join(dir, "coordinator.yaml")
		if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadCoordinator(p)
	}
	c, err := load(`tenants:
  a: {env_token_file: a-env.token, quota: {sessions: 3}, rate: {per_second: 2}}
  b: {env_token_file: ` + filepath.Join(dir, "b-env.token") + `}
tokens:
  - {name: a, file: a.token, tenant: a}
  - {token: caller-b-0123456789abc, tenant: b}
`)
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Tenants["a"]; a.EnvToken != "abx_a_env_0123456789abc" || a.Quota.Sessions != 3 || c.Rates()["a"].PerSecond != 2 || c.Tenants["b"].EnvToken != "abx_b_env_0123456789abc" {
		t.Errorf("tenants = %+v", c.Tenants)
	}
	if c.Tokens[0].Digest != sha256.Sum256([]byte("caller-a-0123456789abc")) || c.Tokens[1].Token != "" || c.Tokens[1].Name != "token #2" {
		t.Errorf("tokens = %+v", c.Tokens)
	}
	for _, tc := range []struct{ name, yml, want string }{
		{"no tenants", "tokens: [{token: caller-b-0123456789abc, tenant: b}]", "no tenants"},
		{"no env token", "tenants: {a: {}}\ntokens: [{token: caller-b-0123456789abc, tenant: a}]", "env_token_file is required"},
		{"missing env token file", "tenants: {a: {env_token_file: nope.token}}\ntokens: [{token: caller-b-0123456789abc, tenant: a}]", "nope.token"},
		{"short env token", "tenants: {a: {env_token_file: short.token}}\ntokens: [{token: caller-b-0123456789abc, tenant: a}]", "shorter than 16"},
		{"a shared env token", "tenants: {a: {env_token_file: a-env.token}, b: {env_token_file: a-env.token}}\ntokens: [{token: caller-b-0123456789abc, tenant: a}]",
			`tenants "a" and "b" have the same environment daemon token`},
		{"a caller token that is a daemon token", "tenants: {a: {env_token_file: a-env.token}}\ntokens: [{name: x, file: a-env.token, tenant: a}]",
			`x: the token is tenant "a"'s environment daemon token`},
		{"no tokens", "tenants: {a: {env_token_file: a-env.token}}", "no tokens"},
		{"an unknown tenant", "tenants: {a: {env_token_file: a-env.token}}\ntokens: [{token: caller-b-0123456789abc, tenant: z}]", `tenant "z" is not configured`},
		{"scopes", "tenants: {a: {env_token_file: a-env.token}}\ntokens: [{token: caller-b-0123456789abc, tenant: a, scopes: [admin]}]", "remove scopes"},
		{"the same token twice", "tenants: {a: {env_token_file: a-env.token}}\ntokens: [{token: caller-b-0123456789abc, tenant: a}, {file: a.token, tenant: a}, {token: caller-a-0123456789abc, tenant: a}]",
			"appears twice"},
		{"negative quota", "tenants: {a: {env_token_file: a-env.token, quota: {sessions: -1}}}\ntokens: [{token: caller-b-0123456789abc, tenant: a}]", "negative quota"},
		{"unknown field", "tenants: {a: {env_token_file: a-env.token, workspace_roots: [/]}}\ntokens: [{token: caller-b-0123456789abc, tenant: a}]", "workspace_roots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.yml)
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrConfig naming %q", err, tc.want)
			}
		})
	}
	if _, err := LocalCoordinator("short", "abx_a_env_0123456789abc"); err == nil || !strings.Contains(err.Error(), "shorter than 16") {
		t.Errorf("LocalCoordinator with a short token: %v", err)
	}
}
