package secret

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// PathRule is one kind of sensitive path. Pattern is in the form .gitignore uses,
// matched at any depth, because a home directory can sit anywhere (/root, ~,
// /home/u, a workspace that vendors one):
//
//	id_rsa*        no slash: a base name anywhere
//	.ssh/          a trailing slash: that directory, anywhere, and all below it
//	.kube/config   a slash inside: that sequence of names, anywhere
//
// Matching ignores case, so a case-insensitive file system cannot hide .ENV.
type PathRule struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	Class   Class  `json:"class"`
}

// PathRules are the sensitive paths. Templates of .env files (.env.example,
// .env.sample, .env.template, .env.dist) are deliberately absent: they are
// committed to be read, and a real value in one is still caught by Scan.
var PathRules = []PathRule{
	{"ssh", ".ssh/", Credential},
	{"ssh-key", "id_rsa*", Credential},
	{"ssh-key", "id_dsa*", Credential},
	{"ssh-key", "id_ecdsa*", Credential},
	{"ssh-key", "id_ed25519*", Credential},
	{"gnupg", ".gnupg/", Credential},
	{"aws", ".aws/", Credential},
	{"gcloud", ".config/gcloud/", Credential},
	{"azure", ".azure/", Credential},
	{"kube", ".kube/config", Credential},
	{"kube", "kubeconfig", Credential},
	{"docker", ".docker/config.json", Credential},
	{"npm", ".npmrc", Credential},
	{"pypi", ".pypirc", Credential},
	{"netrc", ".netrc", Credential},
	{"netrc", "_netrc", Credential},
	{"git-credentials", ".git-credentials", Credential},
	{"gh", ".config/gh/hosts.yml", Credential},
	{"cargo", ".cargo/credentials*", Credential},
	{"gem", ".gem/credentials", Credential},
	{"terraform", ".terraform.d/credentials.tfrc.json", Credential},
	{"vault", ".vault-token", Credential},
	{"pem", "*.pem", Credential},
	{"key", "*.key", Credential},
	{"pkcs12", "*.p12", Credential},
	{"pkcs12", "*.pfx", Credential},
	{"keystore", "*.jks", Credential},
	{"keystore", "*.keystore", Credential},
	{"htpasswd", ".htpasswd", Credential},
	{"env", ".env", Secret},
	{"env", ".env.*", Secret},
	{"env", "*.env", Secret},
	{"tfvars", "*.tfvars", Secret},
	{"secrets", "secrets.y*ml", Secret},
	{"secrets", "secrets.json", Secret},
}

// envTemplates are .env names that are committed examples, not secrets.
var envTemplates = []string{".env.example", ".env.sample", ".env.template", ".env.dist", "example.env", "sample.env"}

// compiled are PathRules as doublestar patterns over a lowercased path.
var compiled = compileRules(PathRules)

type compiledRule struct {
	rule  PathRule
	globs []string
}

func compileRules(rules []PathRule) []compiledRule {
	out := make([]compiledRule, 0, len(rules))
	for _, r := range rules {
		p := strings.ToLower(r.Pattern)
		var globs []string
		switch {
		case strings.HasSuffix(p, "/"):
			d := strings.TrimSuffix(p, "/")
			globs = []string{"**/" + d, "**/" + d + "/**"}
		default:
			globs = []string{"**/" + p}
		}
		out = append(out, compiledRule{r, globs})
	}
	return out
}

// Path returns the rule a path falls under, if it is sensitive. The path may be
// absolute or relative, with "~", "." and ".." segments; it is cleaned first.
func Path(p string) (PathRule, bool) {
	p = normalise(p)
	if p == "" {
		return PathRule{}, false
	}
	base := path.Base(p)
	for _, t := range envTemplates {
		if base == t {
			return PathRule{}, false
		}
	}
	for _, c := range compiled {
		for _, g := range c.globs {
			if ok, _ := doublestar.Match(g, p); ok {
				return c.rule, true
			}
		}
	}
	return PathRule{}, false
}

// ClassOf returns a path's class: the rule's class if it is sensitive, else Project.
func ClassOf(p string) Class {
	if r, ok := Path(p); ok {
		return r.Class
	}
	return Project
}

// normalise cleans a path for matching: forward slashes, lowercase, no leading "/",
// no "." segments. ".." segments that stay after cleaning stay (they are names a
// pattern will not match, and the rules match at any depth anyway).
func normalise(p string) string {
	if p == "" {
		return ""
	}
	p = strings.ToLower(strings.ReplaceAll(p, "\\", "/"))
	p = path.Clean(p)
	p = strings.TrimLeft(p, "/")
	if p == "." {
		return ""
	}
	return p
}
