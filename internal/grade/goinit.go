package grade

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

// initDenied are what a Go package's initialization has no business reaching:
// ending the process, printing to the test binary's output, reading the
// environment or the command line, raw system calls, reflection (which calls
// what the walk below cannot see by name) and unsafe memory, the testing
// machinery, other processes. A test
// binary runs every package initializer before the hidden witness's TestMain, so
// initialization that reaches these can print passing results and a witness line
// and exit before a single test runs. Keyed by import path; "*" is any name.
var initDenied = map[string]map[string]bool{
	"os":                    {"Exit": true, "Getenv": true, "LookupEnv": true, "Environ": true, "Args": true, "Stdout": true, "Stderr": true, "NewFile": true},
	"fmt":                   {"Print": true, "Printf": true, "Println": true},
	"log":                   {"*": true},
	"syscall":               {"*": true},
	"golang.org/x/sys/unix": {"*": true},
	"runtime":               {"Goexit": true},
	"reflect":               {"*": true},
	"unsafe":                {"*": true},
	"testing":               {"*": true},
	"flag":                  {"*": true},
	"os/exec":               {"*": true},
}

// reviewGoInit parses the non-test Go files of every directory a patch touches
// (read through read and list, from the patched repository) and reports each
// reference to an initDenied name that package initialization can reach: from
// init functions and package-level variable initializers, through the package's
// own functions and methods (any declaration of a called name, an
// over-approximation), resolving import aliases. Files that do not parse are
// left to the compiler.
func reviewGoInit(touched []string, read func(string) ([]byte, error), list func(string) ([]string, error)) []Finding {
	dirs := map[string]bool{}
	for _, p := range touched {
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			dirs[path.Dir(p)] = true
		}
	}
	var out []Finding
	for _, dir := range sortedKeys(dirs) {
		names, err := list(dir)
		if err != nil {
			continue
		}
		fset := token.NewFileSet()
		var files []*ast.File
		for _, n := range names {
			if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			p := path.Join(dir, n)
			src, err := read(p)
			if err != nil {
				continue
			}
			if f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution); err == nil {
				files = append(files, f)
			}
		}
		out = append(out, reviewPackage(fset, files)...)
	}
	return out
}

func reviewPackage(fset *token.FileSet, files []*ast.File) []Finding {
	// Files of one directory may belong to several packages (a main next to a
	// library is a build error anyway); names are pooled, an over-approximation.
	funcs := map[string][]*ast.FuncDecl{}
	var roots []ast.Node
	imports := map[*ast.File]map[string]string{} // file -> local name -> import path
	fileOf := map[ast.Node]*ast.File{}
	for _, f := range files {
		imp := map[string]string{}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			name := path.Base(p)
			if is.Name != nil {
				name = is.Name.Name
			}
			imp[name] = p
		}
		imports[f] = imp
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				fileOf[d] = f
				if d.Recv == nil && d.Name.Name == "init" {
					roots = append(roots, d)
				} else {
					funcs[d.Name.Name] = append(funcs[d.Name.Name], d)
				}
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					for _, s := range d.Specs {
						for _, v := range s.(*ast.ValueSpec).Values {
							fileOf[v] = f
							roots = append(roots, v)
						}
					}
				}
			}
		}
	}
	seen := map[ast.Node]bool{}
	found := map[string]Finding{}
	queue := roots
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		f := fileOf[n]
		ast.Inspect(n, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					if p, ok := imports[f][id.Name]; ok {
						if deny := initDenied[p]; deny != nil && (deny["*"] || deny[x.Sel.Name]) {
							pos := fset.Position(x.Pos())
							key := pos.String()
							found[key] = Finding{Path: pos.Filename, Line: int64(pos.Line),
								Token: "package initialization reaches " + p + "." + x.Sel.Name, Text: p + "." + x.Sel.Name}
						}
						return false
					}
				}
				// A method or field of a local value: any declaration of that name.
				for _, d := range funcs[x.Sel.Name] {
					queue = append(queue, d)
				}
			case *ast.Ident:
				for _, d := range funcs[x.Name] {
					queue = append(queue, d)
				}
			}
			return true
		})
	}
	out := make([]Finding, 0, len(found))
	for _, k := range sortedKeys(found) {
		out = append(out, found[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
