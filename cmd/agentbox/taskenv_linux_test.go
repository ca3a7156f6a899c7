package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/egress/egresstest"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestTaskEnvFlagsErrors: grade and eval check template build's build flags
// before anything runs, naming the flag and what to give.
func TestTaskEnvFlagsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "site.crt")
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644)
	for _, cmd := range [][]string{
		{"grade", "--task", filepath.Join(dir, "task"), "--patch", filepath.Join(dir, "fix.patch")},
		{"eval", "--out", filepath.Join(dir, "out")},
	} {
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"bad prefix", []string{"--allow-private", "10.1.2.3"}, `--allow-private "10.1.2.3": want a CIDR prefix`},
			{"host bits", []string{"--allow-private", "10.1.2.3/8"}, "did you mean 10.0.0.0/8"},
			{"missing CA file", []string{"--ca-file", filepath.Join(dir, "none.pem")}, "--ca-file: open " + filepath.Join(dir, "none.pem")},
			{"CA file not PEM", []string{"--ca-file", notPEM}, "--ca-file " + notPEM + ": not PEM"},
		} {
			t.Run(cmd[0]+"/"+tc.name, func(t *testing.T) {
				_, errOut, st := cli(t, append(cmd, tc.args...)...)
				if st != 125 || !strings.Contains(errOut, tc.want) {
					t.Fatalf("status %d, stderr %q; want 125 and %q", st, errOut, tc.want)
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("eval started a run on bad build flags: %v", err)
	}
}

// TestGradeTaskEnvironmentBuild: grade builds a task's embedded environment
// spec (the host's Go, then a go_modules step fetching go-cmp through the Go
// module proxy) into --state-dir's store with the build flags given, and
// grades on it offline, with the module cache of the spec's GOMODCACHE (the
// Go build cache warmed on it too): the reference resolves the task, whose tests import
// go-cmp, the empty patch does not. Where the proxy sits on a reserved
// address (this machine's TLS interceptor), the same grade without
// --allow-private fails building, naming the step.
func TestGradeTaskEnvironmentBuild(t *testing.T) {
	testenv.SkipShort(t, "fetches a Go module from the Go module proxy")
	testenv.RequireRoot(t)
	_, err := os.Stat("/usr/local/go/bin/go")
	testenv.Require(t, err == nil, "Go in /usr/local/go, which the task's spec puts in PATH")
	dir := t.TempDir()
	tdir := filepath.Join(dir, "task")
	for name, data := range map[string]string{
		"task.yaml": `id: same-1
title: Same reports the opposite
statement: |
  same.Same(a, b) must report whether a and b are equal; it reports the
  opposite. Edit same.go only.
language: go
environment:
  base: {host: true}
  env:
    PATH: /usr/local/go/bin:/usr/bin:/bin
    GOPATH: /root/go
    GOMODCACHE: /root/go/pkg/mod
    GOTOOLCHAIN: local
  steps:
    - go_modules: [github.com/google/go-cmp@v0.6.0]
test_command: [go, test, -json, ./...]
env: [GOFLAGS=-mod=mod]
result_format: go-test-json
fail_to_pass: [example.test/same::TestSame]
limits: {timeout: 5m, memory: 2G, pids: 512}
reference: solution.patch
`,
		"repo/go.mod":         "module example.test/same\n\ngo 1.21\n\nrequire github.com/google/go-cmp v0.6.0\n",
		"repo/same.go":        "package same\n\nimport \"github.com/google/go-cmp/cmp\"\n\n// Same reports whether a and b are equal.\nfunc Same(a, b int) bool { return cmp.Diff(a, b) != \"\" }\n",
		"hidden/same_test.go": "package same\n\nimport \"testing\"\n\nfunc TestSame(t *testing.T) {\n\tif !Same(1, 1) || Same(1, 2) {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
		"solution.patch":      "diff --git a/same.go b/same.go\n--- a/same.go\n+++ b/same.go\n@@ -3,4 +3,4 @@\n import \"github.com/google/go-cmp/cmp\"\n \n // Same reports whether a and b are equal.\n-func Same(a, b int) bool { return cmp.Diff(a, b) != \"\" }\n+func Same(a, b int) bool { return cmp.Diff(a, b) == \"\" }\n",
		"empty.patch":         "",
	} {
		p := filepath.Join(tdir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	grade := func(patch string, flags ...string) (string, string, int) {
		t.Helper()
		return cli(t, append([]string{"grade", "--state-dir", state, "--go-cache", filepath.Join(dir, "gocache"), "--task", tdir, "--patch", filepath.Join(tdir, patch)}, flags...)...)
	}
	var flags []string
	for _, p := range egresstest.ReservedPrefixes(t, "proxy.golang.org") {
		flags = append(flags, "--allow-private", p.String())
	}
	if len(flags) > 0 {
		out, errOut, st := grade("solution.patch")
		if st != 125 || !strings.Contains(errOut, "step 1 (go_modules") {
			t.Fatalf("grade without --allow-private, the proxy on a reserved address: status %d\n%s%s", st, out, errOut)
		}
	}
	out, errOut, st := grade("solution.patch", flags...)
	if st != 0 || !strings.Contains(out, "outcome:        resolved") {
		t.Fatalf("grade the reference: status %d\n%s%s", st, out, errOut)
	}
	if !strings.Contains(errOut, "template task-") {
		t.Errorf("grade did not say it built the task's template:\n%s", errOut)
	}
	out, errOut, st = grade("empty.patch", flags...)
	if st != 1 || !strings.Contains(out, "fail_to_pass:   0/1 passed") {
		t.Fatalf("grade the empty patch: status %d\n%s%s", st, out, errOut)
	}
}
