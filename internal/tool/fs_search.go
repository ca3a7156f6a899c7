package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/agentbox/agentbox/internal/secret"
	"github.com/agentbox/agentbox/internal/workspace"
)

type searchArgs struct {
	Pattern    string `json:"pattern" jsonschema:"regular expression (RE2 syntax) matched against each line"`
	Path       string `json:"path,omitempty" jsonschema:"directory or file to search (default: the workspace root)"`
	Glob       string `json:"glob,omitempty" jsonschema:"only files whose name matches this glob, e.g. *.py"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"matches to return, 1 to 500 (default 100)"`
}

type searchOut struct {
	Matches      int  `json:"matches"`
	FilesScanned int  `json:"files_scanned"`
	FilesSkipped int  `json:"files_skipped" jsonschema:"binary, larger than 1 MiB, or sensitive (.env, keys: read those with fs.read)"`
	Truncated    bool `json:"truncated" jsonschema:"more matches or files exist than were searched or returned"`
}

// Search bounds: a search reads through the environment API file by file, so
// it is capped in files, bytes and depth.
const (
	searchMaxFiles     = 5000
	searchMaxFileBytes = 1 << 20
	searchMaxBytes     = 64 << 20
	searchMaxDepth     = 32
	searchMaxLine      = 300
)

func (w *Workspace) fsSearch() Spec {
	return Spec{
		Describe: w.resolving(describeSearch),
		Name:     "fs.search",
		Description: "Search the workspace's text files for lines matching a regular expression, like grep -rn. " +
			"Results are path:line: text, one per line. .git, binary files, files over 1 MiB and sensitive files (.env, keys, " +
			"credentials: fs.read them, which needs the sensitive:read capability) are skipped.",
		InputSchema: SchemaFor[searchArgs](), OutputSchema: SchemaFor[searchOut](),
		Effect: EffectRead, Idempotent: true, Scope: ScopeRead,
		Precondition: func(_ context.Context, raw json.RawMessage) error {
			var a searchArgs
			if err := decode(raw, &a); err != nil {
				return err
			}
			if _, err := compileSearch(a); err != nil {
				return Errorf(EINVAL, false, ActFixArgs, "pattern: %v", err)
			}
			if _, err := path.Match(a.Glob, ""); err != nil {
				return Errorf(EINVAL, false, ActFixArgs, "glob: %v", err)
			}
			if a.MaxResults < 0 || a.MaxResults > 500 {
				return Errorf(EINVAL, false, ActFixArgs, "max_results must be between 1 and 500")
			}
			return nil
		},
		Handler: w.search,
	}
}

func compileSearch(a searchArgs) (*regexp.Regexp, error) {
	if a.Pattern == "" {
		return nil, fmt.Errorf("empty")
	}
	p := a.Pattern
	if a.IgnoreCase {
		p = "(?i)" + p
	}
	return regexp.Compile(p)
}

func (w *Workspace) search(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a searchArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	re, _ := compileSearch(a)
	limit := a.MaxResults
	if limit == 0 {
		limit = 100
	}
	root, err := workspace.CleanPath(a.Path)
	if err != nil {
		return Result{}, err
	}
	st, err := w.o.Service.Stat(ctx, w.o.Owner, w.o.EnvID, root)
	if err != nil {
		return Result{}, err
	}
	// Under a root that is (or passes through) a symlink, a file is also judged
	// where it really is: a search of "cfg", a link to .ssh, skips .ssh/config.
	target, err := resolveLinks(func(p string) (workspace.Entry, error) {
		return w.o.Service.Stat(ctx, w.o.Owner, w.o.EnvID, p)
	}, root)
	if err != nil {
		return Result{}, Errorf(EINVAL, false, ActFixArgs, "%s: %v", root, err)
	}
	sensitive := func(p string) bool {
		if secret.ClassOf(p).Sensitive() {
			return true
		}
		rel, ok := strings.CutPrefix(p, root)
		return ok && target != root && secret.ClassOf(path.Join(target, rel)).Sensitive()
	}
	var out searchOut
	var sb strings.Builder
	var readBytes int64
	scan := func(e workspace.Entry) bool {
		if !e.Mode.IsRegular() || (a.Glob != "" && !globMatch(a.Glob, e.Path)) {
			return true
		}
		if out.FilesScanned >= searchMaxFiles || readBytes >= searchMaxBytes || out.Matches >= limit {
			out.Truncated = true
			return false
		}
		if e.Size > searchMaxFileBytes || (e.Path != root && sensitive(e.Path)) {
			// A search of a tree is a project read: a sensitive file's content
			// is for fs.read under the sensitive:read capability, or an
			// innocent-looking grep would read .env.
			out.FilesSkipped++
			return true
		}
		b, err := w.o.Service.ReadFile(ctx, w.o.Owner, w.o.EnvID, e.Path, 0, 0)
		if err != nil || isBinary(b) {
			out.FilesSkipped++
			return ctx.Err() == nil
		}
		out.FilesScanned++
		readBytes += int64(len(b))
		for i, line := range strings.Split(string(b), "\n") {
			if !re.MatchString(line) {
				continue
			}
			if out.Matches >= limit {
				out.Truncated = true
				return false
			}
			out.Matches++
			if len(line) > searchMaxLine {
				line = line[:runeStart(line, searchMaxLine)] + "…"
			}
			fmt.Fprintf(&sb, "%s:%d: %s\n", e.Path, i+1, line)
		}
		return true
	}
	if st.Mode.IsRegular() {
		scan(st)
	} else if err := w.walk(ctx, root, searchMaxDepth, scan); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	c, refs := w.clipStore(sb.String(), "search results", "fs.search:"+a.Pattern)
	out.Truncated = out.Truncated || c.Truncated
	return Result{Data: out, Text: c.Text, Refs: refs, Source: "fs.search " + root, Truncated: out.Truncated}, nil
}

// globMatch matches a glob against the base name, or against the whole path when
// the glob has a slash.
func globMatch(glob, p string) bool {
	if strings.Contains(glob, "/") {
		ok, _ := path.Match(glob, p)
		return ok
	}
	ok, _ := path.Match(glob, path.Base(p))
	return ok
}
