package secret

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Fixtures are assembled at run time so that no scanner mistakes this file for a
// leak.
func fake(parts ...string) string { return strings.Join(parts, "") }

func TestScan(t *testing.T) {
	for _, c := range []struct {
		name, text, rule string // rule "" means nothing found
		class            Class
	}{
		{"aws id", "export AWS_ACCESS_KEY_ID=" + fake("AKIA", "IOSFODNN7", "EXAMPLQ"), "aws-access-key-id", Credential},
		{"aws secret", "aws_secret_access_key = " + fake("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYz9x3mP1q2R"), "aws-secret-access-key", Credential},
		{"github", "token: " + fake("ghp_", "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0dF3gH6"), "github-token", Credential},
		{"github pat", fake("github_pat_", "11ABCDEFG0123456789_abcdefghijklmnopqrstuv"), "github-token", Credential},
		{"private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n", "private-key", Credential},
		{"rsa key", "-----BEGIN RSA PRIVATE KEY-----", "private-key", Credential},
		{"pgp key", "-----BEGIN PGP PRIVATE KEY BLOCK-----", "private-key", Credential},
		{"slack", fake("xoxb-", "1234567890-abcdefghij"), "slack-token", Credential},
		{"stripe", fake("sk_live_", "4eC39HqLyjWDarjtT1zdp7dc"), "stripe-key", Credential},
		{"anthropic", fake("sk-ant-api03-", strings.Repeat("Ab3_", 20)), "anthropic-key", Credential},
		{"openai", fake("sk-proj-", "Zx8Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz1Xc3Vb5Nm7Qa9Ws1Ed"), "openai-key", Credential},
		{"google", fake("AIza", "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"), "google-api-key", Credential},
		{"npm", fake("//registry.npmjs.org/:_authToken=npm_", "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"), "npm-token", Credential},
		{"placeholder", "TOKEN=" + PlaceholderPrefix + "GITHUB-0123456789abcdef0123456789abcdef", "egress-placeholder", Credential},
		{"url password", "DATABASE_URL=postgres://app:s3cr3tPw@db.internal:5432/app", "url-password", Credential},
		{"jwt", fake("eyJhbGciOiJIUzI1NiJ9", ".eyJzdWIiOiIxMjM0NTY3ODkwIn0", ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"), "jwt", Secret},
		{"env assignment", "API_TOKEN=9f8a7c6e5d4b3a2f1e0d9c8b", "assignment", Secret},
		{"yaml assignment", `client_secret: "Qm9vT3hzLW5vdC1yZWFsLTQ1Njc4OQ"`, "assignment", Secret},
		{"json assignment", `{"apiKey": "k8Ds9fJ2lQ0pW3eR5tY7uI9o"}`, "assignment", Secret},

		{"prose", "This function returns the secret key used by the cache; see the docs.", "", ""},
		{"env reference", "API_TOKEN=${API_TOKEN}", "", ""},
		{"getenv", `token := os.Getenv("GITHUB_TOKEN")`, "", ""},
		{"identifier", "const maxTokensPerRequest = DefaultMaxTokensPerRequest", "", ""},
		{"masked", "AWS_SECRET_ACCESS_KEY=****************************************", "", ""},
		{"low entropy", "PASSWORD_RESET_TIMEOUT=1111111111111111", "", ""},
		{"template", "SECRET_KEY=<your-secret-key-goes-here>", "", ""},
		{"uuid-ish word", "key_name = KeyNameForTheSessionCacheEntry", "", ""},
		{"public key", "-----BEGIN PUBLIC KEY-----", "", ""},
		{"url no password", "https://user@example.com/repo.git", "", ""},
		{"go sum", "golang.org/x/net v0.62.0 h1:abcdEFGH0123ijklMNOP4567qrstUVWX=", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := Scan(c.text)
			if c.rule == "" {
				if len(fs) != 0 {
					t.Fatalf("found %+v (%q) in %q", fs, c.text[fs[0].Start:fs[0].End], c.text)
				}
				if _, ok := Classify(c.text); ok {
					t.Fatal("Classify found something Scan did not")
				}
				return
			}
			if len(fs) != 1 || fs[0].Rule != c.rule || fs[0].Class != c.class {
				t.Fatalf("Scan(%q) = %+v, want one %s (%s)", c.text, fs, c.rule, c.class)
			}
			if cl, ok := Classify(c.text); !ok || cl != c.class {
				t.Fatalf("Classify = %s %v", cl, ok)
			}
			red := Redact(c.text, fs)
			if strings.Contains(red, c.text[fs[0].Start:fs[0].End]) {
				t.Fatalf("Redact left the value in %q", red)
			}
		})
	}
}

func TestScanSpansOrderedAndDisjoint(t *testing.T) {
	text := "a=" + fake("AKIA", "IOSFODNN7", "EXAMPLQ") + "\n" + fake("ghp_", strings.Repeat("a1", 18)) + "\n-----BEGIN EC PRIVATE KEY-----"
	fs := Scan(text)
	if len(fs) != 3 {
		t.Fatalf("want 3 findings, got %+v", fs)
	}
	for i := 1; i < len(fs); i++ {
		if fs[i].Start < fs[i-1].End {
			t.Fatalf("findings overlap or are out of order: %+v", fs)
		}
	}
}

// TestScanFalsePositives measures Scan on real text that holds no secret: this
// repository's documents and Go sources, and the Go standard library's non-test
// sources. A tripwire that fires on ordinary code would taint every session.
func TestScanFalsePositives(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a few thousand files")
	}
	var roots []string
	if root, err := filepath.Abs("../.."); err == nil {
		roots = append(roots, root)
	}
	roots = append(roots, filepath.Join(goroot(t), "src"))
	var files, bytes int
	var hits []string
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || n == ".git" || n == "vendor" {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(p, "_test.go") || !(strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md")) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			files++
			bytes += len(b)
			for _, f := range Scan(string(b)) {
				hits = append(hits, p+": "+f.Rule+": "+string(b[f.Start:f.End]))
			}
			return nil
		})
	}
	if files < 1000 {
		t.Fatalf("read only %d files; the corpus is missing", files)
	}
	t.Logf("%d files, %d MiB, %d findings", files, bytes>>20, len(hits))
	for _, h := range hits {
		t.Log(h)
	}
	// One finding per 2 MiB of ordinary code is the bound; the standard library
	// has a few real test keys outside _test.go files.
	if max := bytes >> 21; len(hits) > max {
		t.Errorf("%d findings in %d MiB of ordinary text, more than %d", len(hits), bytes>>20, max)
	}
}

// TestRandomTokensAreNotWordy bounds how often the identifier heuristic would hide
// a random token: under 2% of random base62 tokens of 16 to 40 characters.
func TestRandomTokensAreNotWordy(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	rng := rand.New(rand.NewPCG(1, 2))
	missed := 0
	const n = 10000
	for i := range n {
		b := make([]byte, 16+i%25)
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		if _, ok := Classify("API_TOKEN=" + string(b)); !ok {
			missed++
		}
	}
	t.Logf("%d of %d random tokens missed", missed, n)
	if missed > n/50 {
		t.Errorf("%d of %d random tokens not recognised", missed, n)
	}
	for _, id := range []string{"EncapsulationKeySize1024", "MarshalPKCS1PrivateKey", "oidPublicKeyEd25519", "newKeyFromSeed1024"} {
		if !wordy(id) {
			t.Errorf("%s is not seen as an identifier", id)
		}
	}
}

// goroot is the GOROOT of the go on PATH (runtime.GOROOT is deprecated: the
// binary's build root need not exist here).
func goroot(t testing.TB) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}
