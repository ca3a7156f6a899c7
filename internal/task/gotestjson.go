package task

import (
	"bufio"
	"bytes"
	"encoding/json"
)

const maxJSONLine = 16 << 20

type testEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// parseGoTestJSON reads `go test -json` output. The id of a test is
// IMPORTPATH::TestName. The output is what the code under test printed too (a
// package's init can print "--- PASS" lines and exit before any test runs), so
// nothing here vouches for it: the built-in Go tasks are judged out of process, and
// a native run is checked with canaries (package canary).
func parseGoTestJSON(data []byte) (Results, error) {
	var r Results
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
		if ev.Test != "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
			r.addKeyed(ev.Package+"::"+ev.Test, TestKey{Name: ev.Test}, Outcome(ev.Action))
		}
	}
	if err := sc.Err(); err != nil {
		return Results{}, resultsErrorf(GoTestJSON, "reading output: %v", err)
	}
	return r, nil
}
