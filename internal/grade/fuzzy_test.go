package grade

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/workspace"
)

const fuzzySrc = `"""A tiny calculator."""

import math


def add(a, b):
    """Return the sum of a and b."""
    return a - b


def sub(a, b):
    """Return a minus b."""
    return a - b
`

// TestRefit checks each lenient step on its own, and that every refitted patch
// applies strictly and produces the file the author meant.
func TestRefit(t *testing.T) {
	fixed := strings.Replace(fuzzySrc, "    return a - b\n", "    return a + b\n", 1)
	cases := []struct {
		name, patch string
		want        string   // the file after the refitted patch; "" when refit must fail
		notes       []string // substrings of the notes, in order
	}{
		{
			name: "offset",
			patch: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -3,3 +3,3 @@ def add(a, b):\n" +
				"     \"\"\"Return the sum of a and b.\"\"\"\n-    return a - b\n+    return a + b\n \n",
			want: fixed, notes: []string{"hunk 1 applied at line 7, +4 lines from its header"},
		},
		{
			name: "whitespace",
			patch: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -7,3 +7,3 @@\n" +
				"  \"\"\"Return   the sum of a and b.\"\"\"\n-\treturn a - b\n+    return a + b\n \n",
			want: fixed, notes: []string{"hunk 1 matched ignoring whitespace"},
		},
		{
			name: "recount",
			patch: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -7,9 +7,1 @@\n" +
				"     \"\"\"Return the sum of a and b.\"\"\"\n-    return a - b\n+    return a + b\n \n",
			want: fixed, notes: []string{"recounted the line counts of 1 hunk headers"},
		},
		{
			name: "plain diff with prefixes",
			patch: "--- a/calc.py\n+++ b/calc.py\n@@ -5,3 +5,3 @@\n" +
				"     \"\"\"Return the sum of a and b.\"\"\"\n-    return a - b\n+    return a + b\n \n",
			want: fixed, notes: []string{"+2 lines"},
		},
		{
			name: "context that is not there",
			patch: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -7,3 +7,3 @@\n" +
				"     \"\"\"Return the product of a and b.\"\"\"\n-    return a - b\n+    return a + b\n \n",
		},
		{
			name: "hunks that would overlap",
			patch: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -11,2 +11,2 @@\n" +
				"     \"\"\"Return a minus b.\"\"\"\n-    return a - b\n+    return a + b\n@@ -12,2 +12,2 @@\n" +
				"     \"\"\"Return a minus b.\"\"\"\n-    return a - b\n+    return b - a\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				if name != "calc.py" {
					return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
				}
				return []byte(fuzzySrc), nil
			}
			out, notes, err := refit([]byte(c.patch), read)
			if c.want == "" {
				if err == nil {
					t.Fatalf("refit succeeded, want an error; patch:\n%s", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(notes, "\n")
			for _, n := range c.notes {
				if !strings.Contains(joined, n) {
					t.Errorf("notes %q lack %q", notes, n)
				}
			}
			dir := t.TempDir()
			root, err := workspace.OpenRoot(dir, workspace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			if err := root.WriteFile("calc.py", []byte(fuzzySrc), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := root.ApplyPatch(out); err != nil {
				t.Fatalf("the refitted patch does not apply strictly: %v\n%s", err, out)
			}
			got, err := root.ReadFile("calc.py", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, []byte(c.want)) {
				t.Errorf("calc.py after the refitted patch:\n%s\nwant:\n%s", got, c.want)
			}
			// The original patch must not have applied strictly: else the case tests nothing.
			if err := root.WriteFile("calc.py", []byte(fuzzySrc), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := root.ApplyPatch([]byte(c.patch)); err == nil {
				t.Errorf("the original patch applies strictly: the case does not need refit")
			}
		})
	}
}

func TestRefitReadError(t *testing.T) {
	patch := "diff --git a/gone.py b/gone.py\n--- a/gone.py\n+++ b/gone.py\n@@ -1 +1 @@\n-a\n+b\n"
	_, _, err := refit([]byte(patch), func(string) ([]byte, error) { return nil, fs.ErrNotExist })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}
