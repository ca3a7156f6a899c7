package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agentbox/agentbox/internal/testenv"
)

// readmeBlocks returns the shell code blocks of README.md.
func readmeBlocks(t *testing.T) []string {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// wordValue is a word's text with every expansion ($id, $(...)) replaced by X.
func wordValue(w *syntax.Word) string {
	var b strings.Builder
	var parts func([]syntax.WordPart)
	parts = func(ps []syntax.WordPart) {
		for _, p := range ps {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				parts(p.Parts)
			default:
				b.WriteString("X")
			}
		}
	}
	parts(w.Parts)
	return b.String()
}

// TestReadmeCommandsParse: every agentbox command in README.md's shell examples,
// sudo ones included, names subcommands and flags that exist (issue 13: examples
// that do not work as written).
func TestReadmeCommandsParse(t *testing.T) {
	n := 0
	for _, block := range readmeBlocks(t) {
		f, err := syntax.NewParser().Parse(strings.NewReader(block), "README.md")
		if err != nil {
			t.Fatalf("README shell block does not parse: %v\n%s", err, block)
		}
		syntax.Walk(f, func(node syntax.Node) bool {
			call, ok := node.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var words []string
			for _, w := range call.Args {
				words = append(words, wordValue(w))
			}
			if words[0] == "sudo" && len(words) > 1 { // the root-only examples: templates, images
				words = words[1:]
			}
			switch {
			case words[0] == "./agentbox" || words[0] == "agentbox":
				words = words[1:]
			case len(words) > 2 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/agentbox":
				words = words[3:]
			default:
				return true
			}
			n++
			line := strings.Join(words, " ")
			cmd, rest, err := newRoot().Find(words)
			if err != nil {
				t.Errorf("README: agentbox %s: %v", line, err)
				return true
			}
			if cmd.HasSubCommands() && !cmd.Runnable() && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
				t.Errorf("README: agentbox %s: no subcommand %q of %q", line, rest[0], cmd.CommandPath())
				return true
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag() // both added by Execute
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("README: agentbox %s: %v", line, err)
			}
			return true
		})
	}
	if n < 30 {
		t.Fatalf("found %d agentbox commands in README.md: the extraction is broken", n)
	}
}

// TestReadmeQuickStart runs the README's first commands verbatim, as a new user
// would after building the binary: in a fresh directory holding ./agentbox.
func TestReadmeQuickStart(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	if err := os.Symlink(agentbox, filepath.Join(dir, "agentbox")); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		prefix string
		status int
	}{
		{"./agentbox --version", 0},
		{"./agentbox task export calc ./calc", 0},
		{"./agentbox run -- echo hello", 0},
		{"./agentbox run --json --timeout 2s -- sleep 10", 124},
		{"./agentbox run --workspace ./calc --diff-out changes.diff", 1}, // the task's tests fail before the fix
		{"./agentbox agent --workspace ./calc --goal \"make the tests pass\" --policy scripted --trace run.jsonl", 0},
		{"./agentbox trace stats run.jsonl", 0},
	}
	var lines []string
	for _, b := range readmeBlocks(t) {
		lines = append(lines, strings.Split(b, "\n")...)
	}
	for _, w := range want {
		var line string
		for _, l := range lines {
			if strings.HasPrefix(l, w.prefix) {
				line = l
				break
			}
		}
		if line == "" {
			t.Errorf("README lacks %q", w.prefix)
			continue
		}
		t.Run(w.prefix, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", line)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			status := 0
			if ee, ok := err.(*exec.ExitError); ok {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != w.status {
				t.Fatalf("%s: status %d, want %d\n%s", line, status, w.status, out)
			}
		})
	}
}
