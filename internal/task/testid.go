package task

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// testIDs validates fail_to_pass and pass_to_pass against the id scheme of the
// task's result format (see the package documentation).
func (l *loader) testIDs(t *Task, f *file) error {
	if len(f.FailToPass) == 0 {
		return l.errf("fail_to_pass", "missing; list the test ids that fail on the starting code and pass once the task is resolved")
	}
	if t.ResultFormat == ExitCode {
		if len(f.FailToPass) != 1 || f.FailToPass[0] != ExitCodeID || len(f.PassToPass) != 0 {
			return l.errf("fail_to_pass", "an exit-code task has exactly one test id, %q, in fail_to_pass and none in pass_to_pass", ExitCodeID)
		}
	}
	seen := map[string]string{}
	for _, list := range []struct {
		field string
		ids   []string
	}{{"fail_to_pass", f.FailToPass}, {"pass_to_pass", f.PassToPass}} {
		for i, id := range list.ids {
			field := fmt.Sprintf("%s[%d]", list.field, i)
			if err := checkTestID(t.ResultFormat, id); err != nil {
				return l.errf(field, "%v", err)
			}
			if prev, dup := seen[id]; dup {
				return l.errf(field, "%q is already listed as %s; each id appears once", id, prev)
			}
			seen[id] = field
		}
	}
	t.FailToPass, t.PassToPass = f.FailToPass, f.PassToPass
	return nil
}

func checkTestID(format ResultFormat, id string) error {
	switch {
	case id == "":
		return errors.New("empty test id")
	case len(id) > maxTestID:
		return fmt.Errorf("test id longer than %d bytes", maxTestID)
	case !utf8.ValidString(id):
		return errors.New("test id is not valid UTF-8")
	case strings.TrimSpace(id) != id:
		return fmt.Errorf("test id %q has leading or trailing space", id)
	case strings.ContainsFunc(id, unicode.IsControl):
		return fmt.Errorf("test id %q contains a control character", id)
	}
	switch format {
	case JUnit, Unittest:
		if djangoIDRE().MatchString(id) {
			return nil
		}
		if strings.Contains(id, "::") {
			file, rest, _ := strings.Cut(id, "::")
			if file == "" || rest == "" || path.IsAbs(file) || path.Clean(file) != file || strings.HasPrefix(file, "../") {
				return fmt.Errorf("junit test id %q: use FILE::NAME or FILE::CLASS::METHOD, FILE relative to the repository root, e.g. tests/test_billing.py::BillingTest::test_one_gram", id)
			}
			head, _, _ := strings.Cut(rest, "[")
			for part := range strings.SplitSeq(head, "::") {
				if part == "" {
					return fmt.Errorf("junit test id %q has an empty part", id)
				}
			}
			return nil
		}
		if k, _ := ParseTestKey(id); k.Class == "" || strings.ContainsAny(id, " ") {
			return fmt.Errorf("%s test id %q: use a pytest node id (tests/test_x.py::TestC::test_m), a dotted id (tests.test_x.TestC.test_m) or Django's form (test_m (tests.test_x.TestC))", format, id)
		}
	case GoTestJSON:
		pkg, name, ok := strings.Cut(id, "::")
		if !ok {
			pkg, name = "-", id // a bare test name, matched in whichever package reports it
		}
		if pkg == "" || strings.ContainsAny(pkg, " :") || strings.ContainsRune(name, ' ') ||
			!(strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Example") || strings.HasPrefix(name, "Fuzz")) {
			return fmt.Errorf("go-test-json test id %q: use IMPORTPATH::TestName or TestName (subtests as TestName/sub), e.g. example.com/retry::TestDo", id)
		}
	}
	return nil
}
