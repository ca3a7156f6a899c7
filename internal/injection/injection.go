// Package injection flags text in tool results that reads like an attempt to
// instruct the model: "ignore previous instructions", "you are now", requests to
// reveal a system prompt, chat role tags and special tokens, tool-call-shaped JSON
// or XML, requests to read or send secrets, notes addressed to an AI, invisible
// and bidirectional characters, and instructions hidden in HTML comments or in
// base64.
//
// It is a signal, not a defence: its flags go to the trace and the report so that
// a person can see what a session was shown. What a session may do is decided by
// the policy (package policy), which no text in a result can change; a result the
// detector misses is no more dangerous than one it flags, and one it flags is run
// through the same policy. The patterns are tuned on real text so that ordinary
// READMEs and code seldom trip them (TestFalsePositives measures it).
//
// It deliberately does not remove or rewrite anything: the model sees the result
// as the tool produced it, marked as data (package provenance).
package injection

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/textscan"
)

// Flag is one suspicious span of a text.
type Flag struct {
	Rule    string `json:"rule"`
	Start   int    `json:"start"` // byte offsets
	End     int    `json:"end"`
	Excerpt string `json:"excerpt"` // the span, clipped, invisible characters shown as \u escapes
}

// rule is one pattern. Hints are lowercase substrings of which a text (or, with
// perLine, a line) must hold one for the pattern to be tried: most text holds
// none, and the patterns are costly.
type rule struct {
	name    string
	re      *regexp.Regexp
	hints   []string
	perLine bool
	// window, if set, tries the pattern only within window bytes of each hint.
	window int
}

// rules are compiled on first use: a program that never calls Detect (a plain
// `agentbox run`) does not pay for them at start-up.
var rules = sync.OnceValue(func() []rule {
	return []rule{
		{"override", regexp.MustCompile(`(?i)\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+|these\s+|those\s+)*(?:previous|prior|above|earlier|preceding|former|original|system|developer|safety)\s+(?:instructions?|prompts?|rules|directions|directives|guidelines|context|messages?|constraints)`),
			[]string{"ignore", "disregard", "forget", "override", "bypass"}, true, 0},
		{"new-instructions", regexp.MustCompile(`(?i)\b(?:new|updated|real|actual|revised)\s+(?:system\s+)?instructions?\s*:|\byour\s+(?:new\s+)?(?:task|goal|instructions?|objective)\s+(?:is|are)\s+now\b`),
			[]string{"instruction", "your"}, true, 0},
		{"role-change", regexp.MustCompile(`(?i)\byou\s+are\s+now\s+(?:a|an|the|in|no\s+longer|DAN|free|unrestricted|jailbroken)\b|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should)\b|\bpretend\s+(?:to\s+be|you\s+are)\s+(?:a|an|the)\s+(?:ai|assistant|model|system|developer|admin|root|user)\b`),
			[]string{"you are now", "from now on", "pretend"}, true, 0},
		{"system-prompt", regexp.MustCompile(`(?i)\b(?:reveal|print|show|repeat|output|leak|disclose|dump)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|entire\s+|hidden\s+)?(?:system\s+prompt|initial\s+instructions|hidden\s+instructions)`),
			[]string{"system prompt", "instructions"}, true, 0},
		{"role-tag", regexp.MustCompile(`<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>|\[/?INST\]|<</?SYS>>|(?i:</?(?:system|assistant|developer)>)`),
			[]string{"<|", "inst]", "<<sys>>", "<</sys>>", "system>", "assistant>", "developer>"}, false, 0},
		// A chat turn written into a file: "system: …" or "Human: …" at the start of a
		// line, not a Go struct field (System: x,) or an assignment (system := …).
		{"role-tag", regexp.MustCompile(`^[ \t]*(?:(?i:system|assistant|developer)|Human)[ \t]*:[ \t]+[^,\n]*[^,\s]$`),
			[]string{"system", "assistant", "developer", "human"}, true, 0},
		{"tool-call", regexp.MustCompile(`\{\s*"(?:tool|name|function|tool_name|recipient_name)"\s*:\s*"[^"]{1,80}"\s*,\s*"(?:arguments|args|parameters|input)"\s*:|"tool_calls"\s*:\s*\[|"function_call"\s*:\s*\{|<(?:tool_call|function_call|tool_use|function_calls|invoke)\b|</?tool_result\b`),
			[]string{`"arguments"`, `"args"`, `"parameters"`, `"input"`, `"tool_calls"`, `"function_call"`, "<tool", "<invoke", "</tool", "<function"}, false, 200},
		// Asking to send secrets somewhere named, or to read a secret's file.
		{"secret-request", regexp.MustCompile(`(?i)\b(?:send|post|upload|exfiltrate|forward|leak|transmit|paste|curl)\b[^\n]{0,80}\b(?:api[_ -]?keys?|secrets?|credentials?|access\s+tokens?|passwords?|\.env\b|ssh\s+keys?|private\s+keys?|environment\s+(?:variables|configuration))\b[^\n]{0,80}(?:https?://|\bto\s+(?:our|the|this|my|a)\s+(?:server|endpoint|webhook|collector|url|address|channel))|\b(?:read|cat|print|open)\s+(?:the\s+|your\s+|all\s+)?(?:\.env\b|environment\s+configuration|~?/?\.aws/credentials|~?/?\.ssh/|id_rsa)`),
			[]string{".env", "secret", "credential", "token", "password", "key", "environment", "id_rsa", ".aws", ".ssh"}, true, 0},
		{"addressed-to-ai", regexp.MustCompile(`(?i)\b(?:attention|note|message|instructions?|notice)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:ai|llms?|assistants?|agents?|language\s+models?|claude|chatgpt|copilot|codex)\b|\bdear\s+(?:ai|assistant|agent|claude|chatgpt)\b|\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|language\s+model|ai\s+assistant|coding\s+agent|autonomous\s+agent)\b`),
			[]string{" ai", "llm", "assistant", "agent", "model", "claude", "chatgpt", "copilot", "codex"}, true, 0},
		// What tool-poisoning descriptions say: keep it from the user, do something
		// first, mark it important.
		{"concealment", regexp.MustCompile(`(?i)\b(?:do\s+not|don't|never)\s+(?:tell|mention|inform|alert|notify|reveal)\s+(?:(?:this|it|that|anything)\s+)?(?:to\s+)?(?:the\s+)?user\b|\bwithout\s+(?:telling|informing|notifying)\s+the\s+user\b`),
			[]string{"user"}, true, 0},
		{"tool-precondition", regexp.MustCompile(`(?i)\bbefore\s+(?:using|calling|invoking|running)\s+(?:this|the|any\s+other)\s+tool\b[^\n]{0,120}\b(?:read|pass|send|include|call|run|fetch)\b|<important>`),
			[]string{"before", "<important>"}, true, 0},
		{"hidden-comment", regexp.MustCompile(`(?is)<!--[^>]{0,400}?\b(?:ai|agent|assistant|llm|claude|gpt|copilot|instructions?|ignore)\b[^>]{0,400}?-->`),
			[]string{"<!--"}, false, 0},
	}
})

// invisible are characters a person does not see that change what a model reads:
// zero-width characters, bidirectional controls (Trojan Source), Unicode tag
// characters (ASCII smuggling).
func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x2064,
		r >= 0x2066 && r <= 0x2069, r == 0xFEFF, r == 0x00AD, r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

var b64RE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9+/]{40,}={0,2}`) })

// maxInput bounds the text Detect reads; past it the rest is not examined.
const maxInput = 4 << 20

// Detect returns the suspicious spans of text, in order. It reads at most 4 MiB.
func Detect(text string) []Flag {
	if len(text) > maxInput {
		text = text[:maxInput]
	}
	out := detect(text, true)
	slices.SortFunc(out, func(a, b Flag) int { return a.Start - b.Start })
	return out
}

func detect(text string, decode bool) []Flag {
	var out []Flag
	lower := textscan.Lower(text)
	for _, r := range rules() {
		if r.window > 0 {
			if !textscan.Hinted(lower, r.hints) {
				continue
			}
			out = append(out, windowed(r, text, lower)...)
			continue
		}
		for _, m := range textscan.FindAll(r.re, r.hints, r.perLine, text, lower) {
			out = append(out, flag(r.name, text, m[0], m[1]))
		}
	}
	// Runs of invisible characters, one flag per run; a lone byte-order mark at
	// the very start is a BOM, not a trick.
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !invisible(r) || (i == 0 && r == 0xFEFF) {
			i += n
			continue
		}
		j := i + n
		for j < len(text) {
			r2, n2 := utf8.DecodeRuneInString(text[j:])
			if !invisible(r2) {
				break
			}
			j += n2
		}
		out = append(out, flag("invisible", text, i, j))
		i = j
	}
	if decode {
		for _, m := range b64RE().FindAllStringIndex(text, -1) {
			s := text[m[0]:m[1]]
			b, err := base64.StdEncoding.DecodeString(padded(s))
			if err != nil || !printable(b) {
				continue
			}
			if inner := detect(string(b), false); len(inner) > 0 {
				f := flag("encoded-instructions", text, m[0], m[1])
				f.Excerpt = "base64 of: " + inner[0].Excerpt
				out = append(out, f)
			}
		}
	}
	return out
}

// windowed tries a rule on the windows around its hints, merged where they
// overlap, so that a long text with no hint costs a few substring searches.
func windowed(r rule, text, lower string) []Flag {
	type span struct{ s, e int }
	var spans []span
	for _, h := range r.hints {
		for at := 0; ; {
			i := strings.Index(lower[at:], h)
			if i < 0 {
				break
			}
			i += at
			spans = append(spans, span{max(0, i-r.window), min(len(text), i+len(h)+r.window)})
			at = i + len(h)
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.s - b.s })
	var out []Flag
	end := -1
	for i := 0; i < len(spans); {
		w := spans[i]
		for i++; i < len(spans) && spans[i].s <= w.e; i++ {
			w.e = max(w.e, spans[i].e)
		}
		for _, m := range r.re.FindAllStringIndex(text[w.s:w.e], -1) {
			if w.s+m[0] >= end {
				out = append(out, flag(r.name, text, w.s+m[0], w.s+m[1]))
				end = w.s + m[1]
			}
		}
	}
	return out
}

func padded(s string) string {
	s = strings.TrimRight(s, "=")
	if r := len(s) % 4; r != 0 {
		s += strings.Repeat("=", 4-r)
	}
	return s
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	bad := 0
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' {
			bad++
		}
	}
	return bad*20 < len(b)
}

const excerptMax = 120

func flag(rule, text string, s, e int) Flag {
	ex := text[s:e]
	if len(ex) > excerptMax {
		cut := excerptMax
		for cut > 0 && !utf8.RuneStart(ex[cut]) {
			cut--
		}
		ex = ex[:cut] + "…"
	}
	var b strings.Builder
	for _, r := range ex {
		if invisible(r) {
			fmt.Fprintf(&b, `\u%04X`, r)
			continue
		}
		b.WriteRune(r)
	}
	return Flag{Rule: rule, Start: s, End: e, Excerpt: b.String()}
}
