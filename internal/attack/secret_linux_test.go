package attack

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEscape_SecretsInEnvironmentAndHome (ANCHORS vector 23): agentbox itself runs
// with AWS_SECRET_ACCESS_KEY, ANTHROPIC_API_KEY and GITHUB_TOKEN set and HOME pointing
// at a home with ~/.aws/credentials, ~/.ssh keys and a .env. None of it may reach the
// command: the environment is built from --env only, and the host home does not
// exist in the sandbox's root. --env must still pass what it is given.
func TestEscape_SecretsInEnvironmentAndHome(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(0, nil, "env")
		if a := at.byName["env:AWS_SECRET_ACCESS_KEY"]; a.detail != fx.secret {
			t.Errorf("control: the environment dump does not show the secret: %v", a)
		}
	})
	t.Run("sandbox-env", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{flags: []string{"--env", "VISIBLE=yes"}, cmd: fx.attack("env")})
		r.at.mustBeDone(t, "env")
		r.at.mustSucceed(t, "--env must reach the command", "env:VISIBLE")
		for _, n := range r.at.withPrefix("env:") {
			at := r.at.byName[n]
			if strings.Contains(at.detail, fx.secret) {
				t.Errorf("ESCAPE secret: %s carries the host secret", n)
			}
			if strings.Contains(at.detail, fx.home) || strings.Contains(at.detail, fx.dir) {
				t.Errorf("%s=%q names a host path", n, at.detail)
			}
		}
		for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN"} {
			if _, ok := r.at.byName["env:"+name]; ok {
				t.Errorf("ESCAPE secret: %s is set in the sandbox", name)
			}
		}
		fx.verifyHost(r)
	})
	t.Run("sandbox-files", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		var ops []string
		for _, p := range []string{".aws/credentials", ".ssh/id_ed25519", ".env", ".bashrc"} {
			ops = append(ops, "read:"+filepath.Join(fx.home, p))
		}
		ops = append(ops, "read:/root/.bashrc", "ls:/root", "ls:/home", "read:/proc/self/environ")
		r := fx.run(boxOpts{cmd: fx.attack("fsops", ops...)})
		r.at.mustBeDone(t, "fsops")
		r.at.mustFail(t, "read the host home", ops2names(ops[:4], 0)...)
		if host, err := os.ReadFile("/root/.bashrc"); err == nil && len(host) > 0 {
			if at := r.at.byName["4:read:/root/.bashrc"]; at.ok && at.detail == string(host) {
				t.Errorf("ESCAPE the host's /root/.bashrc is visible in the sandbox")
			}
		}
		fx.verifyHost(r) // the secret must not appear anywhere in the output
	})
}

// ops2names returns the attempt names fsops gives ops starting at index first.
func ops2names(ops []string, first int) []string {
	var out []string
	for i, op := range ops {
		kind, rest, _ := strings.Cut(op, ":")
		arg, _, _ := strings.Cut(rest, ":")
		out = append(out, strconv.Itoa(first+i)+":"+kind+":"+arg)
	}
	return out
}
