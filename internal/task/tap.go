package task

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// parseTAP reads Test Anything Protocol from standard output. The id of a test is
// its description (without the "- "), or its number when it has none. "# SKIP" and
// "# TODO" directives count as skips; "Bail out!" and a plan that disagrees with
// the number of tests are errors. Indented lines (subtests) are ignored.
func parseTAP(data []byte) (Results, error) {
	var r Results
	plan, count := -1, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLine)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(line, "Bail out!"):
			return Results{}, resultsErrorf(TAP, "the test command bailed out: %s", line)
		case strings.HasPrefix(line, "1.."):
			f := strings.Fields(line[3:])
			n, err := -1, error(nil)
			if len(f) > 0 {
				n, err = strconv.Atoi(f[0])
			}
			if err != nil || n < 0 || plan >= 0 {
				return Results{}, resultsErrorf(TAP, "bad or repeated plan %q", line)
			}
			plan = n
		case strings.HasPrefix(line, "ok") || strings.HasPrefix(line, "not ok"):
			o := OutcomePass
			rest := strings.TrimPrefix(line, "ok")
			if strings.HasPrefix(line, "not ok") {
				o, rest = OutcomeFail, strings.TrimPrefix(line, "not ok")
			}
			if rest != "" && rest[0] != ' ' {
				continue // "okay", not a test line
			}
			count++
			desc, directive, _ := strings.Cut(rest, "#")
			if d := strings.ToUpper(strings.TrimSpace(directive)); strings.HasPrefix(d, "SKIP") || strings.HasPrefix(d, "TODO") {
				o = OutcomeSkip
			}
			desc = strings.TrimSpace(desc)
			num, after, _ := strings.Cut(desc, " ")
			if _, err := strconv.Atoi(num); err == nil {
				desc = strings.TrimSpace(after)
			} else {
				num = strconv.Itoa(count)
			}
			desc = strings.TrimSpace(strings.TrimPrefix(desc, "- "))
			if desc == "" {
				desc = num
			}
			r.addKeyed(desc, TestKey{Name: desc}, o)
		}
	}
	if err := sc.Err(); err != nil {
		return Results{}, resultsErrorf(TAP, "reading output: %v", err)
	}
	if plan >= 0 && plan != count {
		return Results{}, resultsErrorf(TAP, "planned %d tests, saw %d", plan, count)
	}
	return r, nil
}
