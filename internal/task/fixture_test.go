package task

import (
	"os"
	"path/filepath"
	"testing"
)

// fixtureYAML is a valid task.yaml for the files of writeFixture; the load tests
// mutate it line by line.
const fixtureYAML = `id: fix-1.0
title: add subtracts
statement: |
  calc.add returns a - b; make it return a + b. Edit calc.py only.
language: python
public_tests:
  - tests/test_calc.py
hidden_tests: hidden
protected:
  - docs/**
test_command: [python3, -I, -S, -B, agentbox_unittest.py, tests]
result_format: junit
fail_to_pass:
  - tests/test_calc.py::CalcTest::test_add
  - tests/test_calc_hidden.py::HiddenTest::test_commutative
pass_to_pass:
  - tests/test_calc.py::CalcTest::test_sub
limits:
  timeout: 90s
  memory: 256M
  pids: 32
reference: solution.patch
metadata:
  difficulty: trivial
  tags: [arith, demo]
`

const fixturePatch = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def sub(a, b):
`

var fixtureFiles = map[string]string{
	"repo/calc.py":                     "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
	"repo/tests/__init__.py":           "",
	"repo/tests/test_calc.py":          "import unittest\n",
	"repo/docs/notes.txt":              "notes\n",
	"hidden/tests/test_calc_hidden.py": "import unittest\n",
	"hidden/agentbox_unittest.py":      "# runner\n",
	"solution.patch":                   fixturePatch,
}

// writeFixture writes a valid task directory and returns its path.
func writeFixture(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range fixtureFiles {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(fixtureYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
