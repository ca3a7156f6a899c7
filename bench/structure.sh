#!/usr/bin/env bash
# The code's structure in figures: the package graph within the module, ties both
# ways between packages, exported identifiers per package, the interfaces of
# package env and their sizes, the lines of cmd/agentbox and of the two design
# documents. With a commit, also the non-test files that commit touched (the cost
# of one change).
# Usage: bench/structure.sh [COMMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH" CGO_ENABLED=0
mod=$(go list -m)
repo=$PWD
tool=$(mktemp -d)
trap 'rm -rf "$tool"' EXIT
cat >"$tool/main.go" <<'EOF'
// Reads "dir importpath import,import,..." lines and prints, by mode:
// exported: exported identifiers per package (top-level names and methods of
// non-test files); ifaces DIR: the exported interfaces of one package and their
// method counts; ties: pairs of packages tied both ways, where Y imports X and a
// composite literal of X's type is handed one of Y's functions (X then calls Y
// back: api.Options{MCP: mcp.HTTPHandler}).
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type pkg struct {
	dir, path string
	imports   map[string]bool
	files     []*ast.File
	funcs     map[string]bool
}

func main() {
	mod := os.Args[2]
	var pkgs []*pkg
	byPath := map[string]*pkg{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		p := &pkg{dir: f[0], path: f[1], imports: map[string]bool{}, funcs: map[string]bool{}}
		if len(f) > 2 {
			for _, i := range strings.Split(f[2], ",") {
				p.imports[i] = true
			}
		}
		fset := token.NewFileSet()
		names, _ := filepath.Glob(filepath.Join(p.dir, "*.go"))
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, n, nil, 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			p.files = append(p.files, af)
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
					p.funcs[fd.Name.Name] = true
				}
			}
		}
		pkgs = append(pkgs, p)
		byPath[p.path] = p
	}
	short := func(s string) string {
		if s == mod {
			return "."
		}
		return strings.TrimPrefix(s, mod+"/")
	}
	switch os.Args[1] {
	case "exported":
		total := 0
		for _, p := range pkgs {
			n := 0
			for _, af := range p.files {
				for _, d := range af.Decls {
					switch d := d.(type) {
					case *ast.FuncDecl:
						if d.Name.IsExported() {
							n++
						}
					case *ast.GenDecl:
						for _, s := range d.Specs {
							switch s := s.(type) {
							case *ast.TypeSpec:
								if s.Name.IsExported() {
									n++
								}
							case *ast.ValueSpec:
								for _, id := range s.Names {
									if id.IsExported() {
										n++
									}
								}
							}
						}
					}
				}
			}
			total += n
			fmt.Printf("%-34s %d\n", short(p.path), n)
		}
		fmt.Printf("%-34s %d\n", "total", total)
	case "ifaces":
		for _, p := range pkgs {
			if short(p.path) != os.Args[3] {
				continue
			}
			for _, af := range p.files {
				ast.Inspect(af, func(n ast.Node) bool {
					if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						if it, ok := ts.Type.(*ast.InterfaceType); ok {
							own, embedded := 0, 0
							for _, f := range it.Methods.List {
								if _, ok := f.Type.(*ast.FuncType); ok {
									own += len(f.Names)
								} else {
									embedded++
								}
							}
							fmt.Printf("%s.%s: %d methods, %d embedded interfaces\n", filepath.Base(p.path), ts.Name.Name, own, embedded)
						}
					}
					return true
				})
			}
		}
	case "ties":
		ties := map[string]bool{}
		for _, p := range pkgs {
			for _, af := range p.files {
				alias := map[string]string{} // local name -> import path
				for _, is := range af.Imports {
					ip, _ := strconv.Unquote(is.Path.Value)
					name := filepath.Base(ip)
					if is.Name != nil {
						name = is.Name.Name
					}
					alias[name] = ip
				}
				ast.Inspect(af, func(n ast.Node) bool {
					cl, ok := n.(*ast.CompositeLit)
					if !ok {
						return true
					}
					ts, ok := cl.Type.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					xid, ok := ts.X.(*ast.Ident)
					if !ok {
						return true
					}
					x := byPath[alias[xid.Name]]
					if x == nil {
						return true
					}
					for _, el := range cl.Elts {
						v := el
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							v = kv.Value
						}
						sel, ok := v.(*ast.SelectorExpr)
						if !ok {
							continue
						}
						yid, ok := sel.X.(*ast.Ident)
						if !ok {
							continue
						}
						y := byPath[alias[yid.Name]]
						if y != nil && y != x && y.funcs[sel.Sel.Name] && y.imports[x.path] {
							ties[fmt.Sprintf("%s <-> %s (%s.%s{%s.%s} in %s)", short(y.path), short(x.path),
								xid.Name, ts.Sel.Name, yid.Name, sel.Sel.Name, short(p.path))] = true
						}
					}
					return true
				})
			}
		}
		var out []string
		for t := range ties {
			out = append(out, t)
		}
		sort.Strings(out)
		fmt.Println(len(out))
		for _, t := range out {
			fmt.Println(t)
		}
	}
}
EOF
list() { go list -f '{{.Dir}} {{.ImportPath}} {{join .Imports ","}}' ./...; }
run() { list | (cd "$tool" && go run main.go "$@"); }

echo "# package graph (imports within the module)"
go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... | sed "s|$mod/||g" |
	awk '{ printf "%s ->", $1; for (i = 2; i <= NF; i++) if ($i ~ /^(internal|client|cmd)/) printf " %s", $i; print "" }'

echo
echo "# ties both ways (Y imports X, and X is handed a function of Y to call back)"
run ties "$mod"

echo
echo "# exported identifiers per package (top-level names and methods; non-test files)"
run exported "$mod"

echo
echo "# interfaces of package env"
run ifaces "$mod" internal/env

echo
echo "# lines of cmd/agentbox"
printf "non-test: %s\n" "$(cat $(ls cmd/agentbox/*.go | grep -v _test.go) | wc -l)"
printf "tests:    %s\n" "$(cat cmd/agentbox/*_test.go | wc -l)"

echo
echo "# documents (lines; longest line in characters)"
for f in ARCHITECTURE.md THREAT-MODEL.md; do
	printf "%-16s %5d lines, longest %d\n" "$f" "$(wc -l <"$f")" "$(awk '{ if (length > m) m = length } END { print m }' "$f")"
done

if [ $# -gt 0 ]; then
	echo
	echo "# non-test files touched by $1"
	git show --format= --name-only "$1" | grep -v '^$' | grep -v '_test\.go$' | grep -v '/testdata/' | tee "$tool/touched"
	echo "$(wc -l <"$tool/touched") files"
fi
