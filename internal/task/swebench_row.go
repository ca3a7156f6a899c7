package task

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// maxSWERow bounds one line of SWE-bench JSONL; the largest real rows are a few MB.
const maxSWERow = 64 << 20

var (
	repoNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`) })
	commitRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`) })
)

// sweRow is one checked SWE-bench instance.
type sweRow struct {
	line             int
	InstanceID       string
	Repo             string // owner/name
	BaseCommit       string
	ProblemStatement string
	Patch            string
	TestPatch        string
	testFiles        []*gitdiff.File
	FailToPass       []string
	PassToPass       []string
	Version          string // the row's version, which selects its spec
	metadata         map[string]any
	clone            string // the local clone of Repo, once found
}

func (r *sweRow) errf(field, format string, args ...any) error {
	return &ImportError{Line: r.line, InstanceID: r.InstanceID, Field: field, Err: fmt.Errorf(format, args...)}
}

// readSWERows reads and checks every row of r. Blank lines are skipped; fields
// the importer does not use are ignored.
func readSWERows(r io.Reader) ([]*sweRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSWERow)
	var rows []*sweRow
	byID := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		row, err := parseSWERow(line, sc.Bytes())
		if err != nil {
			return nil, err
		}
		if prev, dup := byID[row.InstanceID]; dup {
			return nil, row.errf("instance_id", "also on line %d; each instance appears once", prev)
		}
		byID[row.InstanceID] = line
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ImportError{Line: line + 1, Err: fmt.Errorf("line longer than %d bytes", maxSWERow)}
		}
		return nil, fmt.Errorf("import swe-bench: read: %w", err)
	}
	if len(rows) == 0 {
		return nil, errors.New("import swe-bench: no rows; give JSONL, one SWE-bench instance per line")
	}
	return rows, nil
}

func parseSWERow(line int, data []byte) (*sweRow, error) {
	row := &sweRow{line: line}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, row.errf("", "not a JSON object (%v); each line holds one SWE-bench instance", err)
	}
	var err error
	str := func(key string) string {
		if err != nil {
			return ""
		}
		var s string
		s, err = jsonString(m, key)
		if err != nil {
			err = row.errf(key, "%w", err)
		}
		return s
	}
	row.InstanceID = str("instance_id")
	if err != nil {
		return nil, err
	}
	if e := checkID(row.InstanceID); e != nil {
		return nil, row.errf("instance_id", "%v: it names the task and its directory (SWE-bench ids such as django__django-11099 qualify)", e)
	}
	row.Repo = str("repo")
	row.BaseCommit = str("base_commit")
	row.ProblemStatement = str("problem_statement")
	row.Patch = str("patch")
	row.TestPatch = str("test_patch")
	if err != nil {
		return nil, err
	}
	if !repoNameRE().MatchString(row.Repo) || strings.HasPrefix(row.Repo, "./") || strings.HasPrefix(row.Repo, "../") ||
		strings.HasSuffix(row.Repo, "/.") || strings.HasSuffix(row.Repo, "/..") {
		return nil, row.errf("repo", "%q: want owner/name, as on GitHub (letters, digits, '_', '.', '-')", row.Repo)
	}
	if !commitRE().MatchString(row.BaseCommit) {
		return nil, row.errf("base_commit", "%q: want the full commit hash in lowercase hex", row.BaseCommit)
	}
	switch s := row.ProblemStatement; {
	case strings.TrimSpace(s) == "":
		return nil, row.errf("problem_statement", "blank; it becomes the statement the agent is given")
	case len(s) > maxStatement:
		return nil, row.errf("problem_statement", "%d bytes, over the %d-byte limit of a statement; shorten it or leave the instance out", len(s), maxStatement)
	case strings.ContainsRune(s, 0):
		return nil, row.errf("problem_statement", "contains a NUL byte")
	}
	if err := checkGoldPatch(row.Patch); err != nil {
		return nil, row.errf("patch", "%w", err)
	}
	if row.testFiles, err = checkTestPatch(row.TestPatch); err != nil {
		return nil, row.errf("test_patch", "%w", err)
	}
	// The result format, hence the id scheme, is known once the tree is: Load
	// checks the ids in it.
	if err := row.testIDs(m, ""); err != nil {
		return nil, err
	}
	if row.metadata, err = sweMetadata(m, row); err != nil {
		return nil, err
	}
	row.Version, _ = row.metadata["version"].(string)
	return row, nil
}

// jsonString returns the string field key of m, which must be present.
func jsonString(m map[string]json.RawMessage, key string) (string, error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return "", errors.New("missing; every SWE-bench row has instance_id, repo, base_commit, problem_statement, patch, test_patch, FAIL_TO_PASS and PASS_TO_PASS")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("want a JSON string, got %.40s", raw)
	}
	return s, nil
}

// testList decodes FAIL_TO_PASS or PASS_TO_PASS: a JSON array of strings or, as
// in the published SWE-bench datasets, a string holding one.
func testList(raw json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("want a JSON array of test ids, or a string holding one")
	}
	if err := json.Unmarshal([]byte(s), &list); err != nil || list == nil {
		return nil, fmt.Errorf("the string %.60q does not hold a JSON array of test ids", s)
	}
	return list, nil
}

func (r *sweRow) testIDs(m map[string]json.RawMessage, format ResultFormat) error {
	seen := map[string]string{}
	for _, f := range []struct {
		key  string
		dst  *[]string
		need bool
	}{{"FAIL_TO_PASS", &r.FailToPass, true}, {"PASS_TO_PASS", &r.PassToPass, false}} {
		raw, ok := m[f.key]
		if !ok || string(raw) == "null" {
			return r.errf(f.key, "missing; give the test ids as a JSON array (it may be empty for PASS_TO_PASS)")
		}
		list, err := testList(raw)
		if err != nil {
			return r.errf(f.key, "%w", err)
		}
		if f.need && len(list) == 0 {
			return r.errf(f.key, "empty; an instance needs at least one test that the gold patch makes pass")
		}
		var ids []string
		for i, id := range list {
			if err := checkTestID(format, id); err != nil {
				return r.errf(fmt.Sprintf("%s[%d]", f.key, i), "%v", err)
			}
			if prev, dup := seen[id]; dup {
				if prev == f.key {
					continue // a repeat within one list is harmless; keep the first
				}
				return r.errf(fmt.Sprintf("%s[%d]", f.key, i), "%q is also in %s; a test cannot be both", id, prev)
			}
			seen[id] = f.key
			ids = append(ids, id)
		}
		*f.dst = ids
	}
	return nil
}

// sweMetadata keeps the optional fields that describe an instance. hints_text
// (issue comments) lands in the metadata, never in what the agent is told;
// origin (where a row built from a project's history came from) too.
func sweMetadata(m map[string]json.RawMessage, r *sweRow) (map[string]any, error) {
	md := map[string]any{
		"source":      "swe-bench",
		"instance_id": r.InstanceID,
		"repo":        r.Repo,
		"base_commit": r.BaseCommit,
	}
	for _, key := range []string{"hints_text", "version", "created_at", "environment_setup_commit", "origin"} {
		raw, ok := m[key]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			var n json.Number
			if key != "version" || json.Unmarshal(raw, &n) != nil {
				return nil, r.errf(key, "want a JSON string or null")
			}
			s = n.String()
		}
		if s != "" {
			md[key] = s
		}
	}
	return md, nil
}

// checkGoldPatch parses the reference patch; Load checks that it applies and
// touches nothing protected.
func checkGoldPatch(patch string) error {
	files, _, err := gitdiff.Parse(strings.NewReader(patch))
	if err != nil {
		return fmt.Errorf("not a unified diff: %w", err)
	}
	if len(files) == 0 {
		return errors.New("no file changes; the gold patch is a git diff that resolves the instance")
	}
	for _, f := range files {
		for _, name := range []string{f.OldName, f.NewName} {
			if name == "" {
				continue
			}
			if err := checkPatchName(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkTestPatch parses the test patch and rejects what cannot become hidden
// files copied over the repository: deletions and renames (the grader only adds
// and replaces files), symlinks, and paths outside the repository or inside .git.
func checkTestPatch(patch string) ([]*gitdiff.File, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(patch))
	if err != nil {
		return nil, fmt.Errorf("not a unified diff: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("no file changes; the test patch is a git diff adding or changing the tests")
	}
	for _, f := range files {
		for _, name := range []string{f.OldName, f.NewName} {
			if name == "" {
				continue
			}
			if err := checkPatchName(name); err != nil {
				return nil, fmt.Errorf("%w; test files must be inside the repository", err)
			}
			for seg := range strings.SplitSeq(name, "/") {
				if strings.EqualFold(seg, ".git") {
					return nil, fmt.Errorf("changes %s, inside .git", name)
				}
			}
		}
		switch {
		case f.IsDelete:
			return nil, fmt.Errorf("deletes %s; hidden tests can add and replace files but not delete them, so leave this instance out", f.OldName)
		case f.IsRename:
			return nil, fmt.Errorf("renames %s to %s; hidden tests can add and replace files but not delete them, so leave this instance out", f.OldName, f.NewName)
		case !regularMode(f.OldMode) || !regularMode(f.NewMode):
			return nil, fmt.Errorf("%s is a symlink or a submodule; hidden test files must be regular files", f.NewName)
		}
	}
	return files, nil
}

// regularMode reports whether a git mode from a patch header is a regular file's,
// or absent (a header without a mode line).
func regularMode(m os.FileMode) bool {
	t := m & 0o170000
	return t == 0 || t == 0o100000
}
