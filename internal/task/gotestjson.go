package task

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// WitnessPrefix starts the line the hidden Go witness prints after its package's
// tests ran: "agentbox-witness nonce=NONCE exit=CODE".
const WitnessPrefix = "agentbox-witness "

const maxJSONLine = 16 << 20

type testEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// parseGoTestJSON reads `go test -json` output. The id of a test is
// IMPORTPATH::TestName. With a nonce, each package that reported tests must also
// have printed exactly one witness line with that nonce, and its exit code must
// agree with the package's outcomes; otherwise all of that package's tests become
// errors. Its output is what the code under test printed too: a package whose
// binary printed "--- PASS" lines and exited early has no witness.
func parseGoTestJSON(data []byte, nonce string) (Results, error) {
	var r Results
	type pkgState struct {
		tests     []string
		witnesses []string // the nonce=... exit=... text of each witness line
	}
	pkgs := map[string]*pkgState{}
	pkg := func(name string) *pkgState {
		if pkgs[name] == nil {
			pkgs[name] = &pkgState{}
		}
		return pkgs[name]
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev testEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return Results{}, resultsErrorf(GoTestJSON, "line %d is not a test event: %v", n, err)
		}
		switch {
		case ev.Test != "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			id := ev.Package + "::" + ev.Test
			r.add(id, Outcome(ev.Action))
			p := pkg(ev.Package)
			if !slices.Contains(p.tests, id) {
				p.tests = append(p.tests, id)
			}
		case ev.Test == "" && ev.Action == "output":
			if w, ok := strings.CutPrefix(strings.TrimPrefix(ev.Output, "\x16"), WitnessPrefix); ok {
				pkg(ev.Package).witnesses = append(pkg(ev.Package).witnesses, strings.TrimRight(w, "\r\n"))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Results{}, resultsErrorf(GoTestJSON, "reading output: %v", err)
	}
	if nonce == "" {
		return r, nil
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range pkgs {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		p := pkgs[name]
		if len(p.tests) == 0 {
			continue
		}
		if problem := witnessProblem(p.witnesses, nonce, r, p.tests); problem != "" {
			r.Problems = append(r.Problems, fmt.Sprintf("package %s: %s; its tests count as errors", name, problem))
			for _, id := range p.tests {
				r.Tests[id] = OutcomeError
			}
		}
	}
	return r, nil
}

func witnessProblem(witnesses []string, nonce string, r Results, tests []string) string {
	if len(witnesses) != 1 {
		return fmt.Sprintf("%d witness lines, want exactly 1 (the test binary stopped before its tests finished, or its output was forged)", len(witnesses))
	}
	var gotNonce, gotExit string
	for f := range strings.FieldsSeq(witnesses[0]) {
		switch k, v, _ := strings.Cut(f, "="); k {
		case "nonce":
			gotNonce = v
		case "exit":
			gotExit = v
		}
	}
	if gotNonce != nonce {
		return "the witness line does not carry this run's nonce"
	}
	code, err := strconv.Atoi(gotExit)
	if err != nil {
		return fmt.Sprintf("the witness line has no valid exit code: %q", witnesses[0])
	}
	failed := slices.ContainsFunc(tests, func(id string) bool {
		o := r.Tests[id]
		return o == OutcomeFail || o == OutcomeError
	})
	if (code == 0) == failed {
		return fmt.Sprintf("the witness reports exit %d but the events say failed=%v", code, failed)
	}
	return ""
}
