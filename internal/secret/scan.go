package secret

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/internal/textscan"
)

// Finding is one secret-shaped span of a text.
type Finding struct {
	Rule  string `json:"rule"`  // "aws-access-key-id", "assignment", …
	Class Class  `json:"class"` // Secret or Credential
	Start int    `json:"start"` // byte offsets of the value in the text
	End   int    `json:"end"`
}

// ContentRule is one shape of secret. The value is the regexp's first group if it
// has one, else the whole match. Hints are lowercase substrings of which a text
// must hold one for the regexp to be tried at all (a cheap prefilter); a rule with
// PerLine is tried only on the lines holding a hint. MinEntropy, when set, is the
// Shannon entropy in bits per byte the value must reach and the value must mix
// letters and digits, so that "TOKEN=changeme-changeme" is not a secret and
// "TOKEN=8fQ2…" is.
type ContentRule struct {
	Name       string
	Class      Class
	Re         *regexp.Regexp
	Hints      []string
	PerLine    bool
	MinEntropy float64
}

// PlaceholderPrefix begins every placeholder package egress makes for a secret the
// sandbox must not hold (egress.NewPlaceholder); one seen in a tool result means the
// environment's secrets were read.
const PlaceholderPrefix = "agentbox-secret-"

// assignNames are the words that make a name say it holds a secret.
var assignNames = []string{"key", "token", "secret", "passwd", "password", "pwd", "credential", "auth"}

// ContentRules are the secret shapes Scan looks for, compiled on first use: a
// program that never scans (a plain `agentbox run`) does not pay for them at
// start-up.
var ContentRules = sync.OnceValue(func() []ContentRule {
	return []ContentRule{
		{Name: "private-key", Class: Credential, Hints: []string{"private key"},
			Re: regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)},
		{Name: "aws-access-key-id", Class: Credential, Hints: []string{"akia", "asia", "abia", "acca", "aroa", "aida"},
			Re: regexp.MustCompile(`\b((?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[0-9A-Z]{16})\b`)},
		{Name: "aws-secret-access-key", Class: Credential, MinEntropy: 4, Hints: []string{"aws"}, PerLine: true,
			Re: regexp.MustCompile(`(?i)aws[a-z0-9_ .-]{0,20}(?:secret|key)[a-z0-9_ .-]{0,20}['"]?\s*[:=]\s*['"]?([A-Za-z0-9/+]{40})\b`)},
		{Name: "github-token", Class: Credential, Hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
			Re: regexp.MustCompile(`\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255})\b`)},
		{Name: "github-token", Class: Credential, Hints: []string{"github_pat_"},
			Re: regexp.MustCompile(`\b(github_pat_[A-Za-z0-9_]{22,255})\b`)},
		{Name: "gitlab-token", Class: Credential, Hints: []string{"glpat-"}, Re: regexp.MustCompile(`\b(glpat-[A-Za-z0-9_-]{20,})`)},
		{Name: "slack-token", Class: Credential, Hints: []string{"xox"}, Re: regexp.MustCompile(`\b(xox[abposr]-[A-Za-z0-9-]{10,})`)},
		{Name: "slack-webhook", Class: Credential, Hints: []string{"hooks.slack.com"},
			Re: regexp.MustCompile(`(https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+)`)},
		{Name: "stripe-key", Class: Credential, Hints: []string{"_live_", "_test_"},
			Re: regexp.MustCompile(`\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})\b`)},
		{Name: "anthropic-key", Class: Credential, Hints: []string{"sk-ant-"},
			Re: regexp.MustCompile(`\b(sk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_-]{32,})`)},
		{Name: "openai-key", Class: Credential, Hints: []string{"t3blbkfj"},
			Re: regexp.MustCompile(`\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,})`)},
		{Name: "openai-key", Class: Credential, MinEntropy: 4, Hints: []string{"sk-proj-", "sk-svcacct-", "sk-admin-"},
			Re: regexp.MustCompile(`\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,})`)},
		{Name: "google-api-key", Class: Credential, Hints: []string{"aiza"}, Re: regexp.MustCompile(`\b(AIza[0-9A-Za-z_-]{35})`)},
		{Name: "npm-token", Class: Credential, Hints: []string{"npm_"}, Re: regexp.MustCompile(`\b(npm_[A-Za-z0-9]{36})\b`)},
		{Name: "pypi-token", Class: Credential, Hints: []string{"pypi-"}, Re: regexp.MustCompile(`\b(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})`)},
		{Name: "egress-placeholder", Class: Credential, Hints: []string{PlaceholderPrefix},
			Re: regexp.MustCompile(regexp.QuoteMeta(PlaceholderPrefix) + `[A-Za-z0-9_]{1,64}-[0-9a-f]{32,}`)},
		{Name: "url-password", Class: Credential, Hints: []string{"://"}, PerLine: true,
			Re: regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^/\s:@'"]{1,64}:([^/\s@'"]{3,128})@[A-Za-z0-9.-]+`)},
		{Name: "jwt", Class: Secret, Hints: []string{"eyj"},
			Re: regexp.MustCompile(`\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})`)},
		// An assignment to a name that says it holds a secret (KEY=, TOKEN=, SECRET=,
		// PASSWORD=…) of a value that looks random: at the start of a line, as in env
		// files, shell, YAML and INI, or of a quoted value anywhere, as in JSON and code.
		{Name: "assignment", Class: Secret, MinEntropy: 3.5, Hints: assignNames, PerLine: true,
			Re: regexp.MustCompile(`^[ \t]*(?:export[ \t]+)?[A-Za-z0-9_.-]*(?i:key|token|secret|passw(?:or)?d|pwd|credentials?|auth)[A-Za-z0-9_.-]*['"]?[ \t]*[:=][ \t]*['"]?([A-Za-z0-9+/=_~-]{16,})`)},
		{Name: "assignment", Class: Secret, MinEntropy: 3.5, Hints: assignNames, PerLine: true,
			Re: regexp.MustCompile(`(?i:key|token|secret|passw(?:or)?d|pwd|credentials?|auth)[A-Za-z0-9_.-]*['"]?[ \t]*(?::=|[:=])[ \t]*['"]([^'"\s]{16,})['"]`)},
	}
})

// Scan returns the secret-shaped spans of text, in order of their start, one per
// span (where two rules find the same or overlapping values, the first of
// ContentRules wins). It reads all of text: the caller bounds it.
func Scan(text string) []Finding {
	lower := textscan.Lower(text)
	var out []Finding
	add := func(r ContentRule, m []int) {
		s, e := m[0], m[1]
		if len(m) >= 4 && m[2] >= 0 {
			s, e = m[2], m[3]
		}
		v := text[s:e]
		if boring(v) || r.MinEntropy > 0 && !random(v, r.MinEntropy) {
			return
		}
		if overlaps(out, s, e) {
			return
		}
		out = append(out, Finding{Rule: r.Name, Class: r.Class, Start: s, End: e})
	}
	for _, r := range ContentRules() {
		for _, m := range textscan.FindAll(r.Re, r.Hints, r.PerLine, text, lower) {
			add(r, m)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return a.Start - b.Start })
	return out
}

// Classify returns the most sensitive class Scan finds in text, and whether it
// found anything.
func Classify(text string) (Class, bool) {
	c := Class("")
	for _, f := range Scan(text) {
		c = Max(c, f.Class)
	}
	return c, c != ""
}

func overlaps(fs []Finding, s, e int) bool {
	for _, f := range fs {
		if s < f.End && f.Start < e {
			return true
		}
	}
	return false
}

// Entropy is the Shannon entropy of s in bits per byte.
func Entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var n [256]int
	for i := 0; i < len(s); i++ {
		n[s[i]]++
	}
	var h float64
	l := float64(len(s))
	for _, c := range n {
		if c > 0 {
			p := float64(c) / l
			h -= p * math.Log2(p)
		}
	}
	return h
}

// boring reports values that are placeholders or references rather than secrets:
// template markers, variable references, masked values.
func boring(v string) bool {
	l := strings.ToLower(v)
	for _, m := range []string{"${", "{{", "<", "xxxx", "****", "....", "changeme", "example", "placeholder",
		"your_", "your-", "redacted", "dummy", "password", "process.env", "os.environ", "getenv"} {
		if strings.Contains(l, m) {
			return true
		}
	}
	return false
}

// random reports whether v looks like a random token rather than an identifier, a
// number or a path: entropy of at least min bits per byte, letters and digits
// mixed, and less than half of it made of words.
func random(v string, min float64) bool {
	return Entropy(v) >= min && mixed(v) && !wordy(v)
}

// wordy reports whether most of v (60%) is words: a capital or lowercase letter
// followed by two or more lowercase letters, a quarter of them vowels or more.
// Identifiers (EncapsulationKeySize1024, MarshalPKCS1PrivateKey) and paths are; a
// random token of letters and digits seldom is (TestRandomTokensAreNotWordy).
func wordy(v string) bool {
	covered := 0
	for i := 0; i < len(v); {
		k := i + 1
		for k < len(v) && isLower(v[k]) {
			k++
		}
		if (isUpper(v[i]) || isLower(v[i])) && k-i >= 3 && 4*vowels(v[i:k]) >= k-i {
			covered += k - i
		}
		i = k
	}
	return 5*covered >= 3*len(v)
}

func vowels(w string) int {
	n := 0
	for i := 0; i < len(w); i++ {
		switch w[i] | 0x20 {
		case 'a', 'e', 'i', 'o', 'u', 'y':
			n++
		}
	}
	return n
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }

// mixed reports whether v has both letters and digits: a random token of 16 or
// more characters nearly always does; identifiers (SOME_LONG_CONSTANT_NAME,
// camelCaseFunctionName) and numbers do not.
func mixed(v string) bool {
	letters, digits := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters++
		}
	}
	return letters > 0 && digits > 0
}

// Redact returns text with each finding's value replaced by its rule name and
// length, for showing a person what would be sent without showing the secret.
func Redact(text string, fs []Finding) string {
	var b strings.Builder
	at := 0
	for _, f := range fs {
		if f.Start < at || f.End > len(text) {
			continue
		}
		b.WriteString(text[at:f.Start])
		b.WriteString("[" + f.Rule + ", " + strconv.Itoa(f.End-f.Start) + " bytes]")
		at = f.End
	}
	b.WriteString(text[at:])
	return b.String()
}
