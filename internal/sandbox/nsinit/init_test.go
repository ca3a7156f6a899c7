package nsinit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneInitFunction: the helpers run from this package's init function and never
// return to it (see run_linux.go), so an init function in any other file of the
// package might not have run when the sandbox init starts: there must be none.
func TestOneInitFunction(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var inits []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range f.Decls {
			if fd, ok := obj.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
				inits = append(inits, fset.Position(fd.Pos()).String())
			}
		}
	}
	if len(inits) != 1 || !strings.HasPrefix(inits[0], "run_linux.go:") {
		t.Errorf("init functions at %v, want exactly one, in run_linux.go", inits)
	}
}
