package secret

import "testing"

func TestPath(t *testing.T) {
	for _, c := range []struct {
		path string
		rule string // "" means not sensitive
	}{
		{".env", "env"},
		{"./.env", "env"},
		{"app/.env.production", "env"},
		{"config/prod.env", "env"},
		{".ENV", "env"}, // a case-insensitive file system would open .env
		{"/root/.ssh/id_ed25519", "ssh"},
		{"~/.ssh", "ssh"},
		{"~/.ssh/", "ssh"},
		{"home/u/.ssh/known_hosts", "ssh"},
		{"deploy/id_rsa", "ssh-key"},
		{"deploy/id_rsa.pub", "ssh-key"}, // the pair is kept together
		{"/home/u/.aws/credentials", "aws"},
		{".config/gcloud/application_default_credentials.json", "gcloud"},
		{"x/.azure/accessTokens.json", "azure"},
		{"/root/.kube/config", "kube"},
		{"ci/kubeconfig", "kube"},
		{"/root/.docker/config.json", "docker"},
		{".npmrc", "npm"},
		{"pkg/.pypirc", "pypi"},
		{"/root/.netrc", "netrc"},
		{".git-credentials", "git-credentials"},
		{"certs/server.pem", "pem"},
		{"tls/server.key", "key"},
		{"a/b/../.env", "env"},
		{"src/a/../../.ssh/id_rsa", "ssh"},
		{"secrets.yaml", "secrets"},
		{"prod.tfvars", "tfvars"},

		{".env.example", ""},
		{"config/.env.sample", ""},
		{"src/env.go", ""},
		{"src/environment.py", ""},
		{"docs/ssh.md", ""},
		{".sshrc", ""},
		{"README.md", ""},
		{"keys.go", ""},
		{"src/keyboard.key.go", ""},
		{"docker/config.json", ""},
		{".config/other/x", ""},
		{"", ""},
		{".", ""},
	} {
		r, ok := Path(c.path)
		if got := map[bool]string{true: r.Name}[ok]; got != c.rule {
			t.Errorf("Path(%q) = %q, want %q", c.path, got, c.rule)
		}
		want := Project
		if c.rule != "" {
			want = r.Class
		}
		if got := ClassOf(c.path); got != want {
			t.Errorf("ClassOf(%q) = %s, want %s", c.path, got, want)
		}
	}
}

func TestClassOrder(t *testing.T) {
	for i, c := range Classes {
		if c.Rank() != i {
			t.Errorf("%s has rank %d, want %d", c, c.Rank(), i)
		}
	}
	if Max(Project, Credential) != Credential || Max(Secret, Public) != Secret || Max("", Public) != Public {
		t.Error("Max does not pick the more sensitive class")
	}
	if _, err := ParseClass("private"); err == nil {
		t.Error("ParseClass accepted an unknown class")
	}
	var c Class
	if err := c.UnmarshalJSON([]byte(`"credential"`)); err != nil || c != Credential {
		t.Errorf("UnmarshalJSON: %v %s", err, c)
	}
	if err := c.UnmarshalJSON([]byte(`"secrets"`)); err == nil {
		t.Error("UnmarshalJSON accepted a misspelt class")
	}
}
