package attack

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Result is the `agentbox run --json` object, decoded by the field names of the CLI
// contract.
type Result struct {
	ExitCode        int     `json:"exit_code"`
	Signal          *string `json:"signal"`
	TimedOut        bool    `json:"timed_out"`
	Cancelled       bool    `json:"cancelled"`
	OOMKilled       bool    `json:"oom_killed"`
	Limit           string  `json:"limit"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	StdoutBytes     int64   `json:"stdout_bytes"`
	StderrBytes     int64   `json:"stderr_bytes"`
	DurationMS      float64 `json:"duration_ms"`
	CPUUserMS       float64 `json:"cpu_user_ms"`
	CPUSysMS        float64 `json:"cpu_sys_ms"`
	MemoryPeak      int64   `json:"memory_peak_bytes"`
	Survivors       int     `json:"survivors"`
	Isolation       string  `json:"isolation"`
	LandlockABI     int     `json:"landlock_abi"`
	Error           string  `json:"error"`
	// Network is absent (nil) without --allow-host, a list (maybe empty) with it.
	Network []NetEvent `json:"network"`
}

// NetEvent is one connection of Result.Network, by the CLI contract's names.
type NetEvent struct {
	Seq       uint64 `json:"seq"`
	Time      string `json:"time"`
	Proto     string `json:"proto"`
	Host      string `json:"host"`
	Port      int    `json:"port"`
	Addr      string `json:"addr"`
	Decision  string `json:"decision"`
	Reason    string `json:"reason"`
	Detail    string `json:"detail"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
}

// sig returns the signal name or "".
func (r *Result) sig() string {
	if r.Signal == nil {
		return ""
	}
	return *r.Signal
}

// attempt is one `RESULT <name> ok|fail <detail>` line of the attacker.
type attempt struct {
	ok     bool
	detail string // the unquoted detail (ok) or the errno name (fail)
}

func (a attempt) String() string {
	if a.ok {
		return "ok: " + a.detail
	}
	return "fail: " + a.detail
}

// attempts is what one attacker run reported.
type attempts struct {
	byName   map[string]attempt
	order    []string
	done     map[string]bool // vectors that printed DONE
	tried    []string        // ATTEMPT lines (calls that may have killed the process)
	unparsed []string
}

func parseAttempts(out string) *attempts {
	a := &attempts{byName: map[string]attempt{}, done: map[string]bool{}}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "RESULT "):
			f := strings.SplitN(line, " ", 4)
			if len(f) < 4 {
				a.unparsed = append(a.unparsed, line)
				continue
			}
			at := attempt{ok: f[2] == "ok", detail: f[3]}
			if at.ok {
				if s, err := strconv.Unquote(f[3]); err == nil {
					at.detail = s
				}
			}
			if _, dup := a.byName[f[1]]; !dup {
				a.order = append(a.order, f[1])
			}
			a.byName[f[1]] = at
		case strings.HasPrefix(line, "DONE "):
			a.done[strings.TrimPrefix(line, "DONE ")] = true
		case strings.HasPrefix(line, "ATTEMPT "):
			a.tried = append(a.tried, strings.TrimPrefix(line, "ATTEMPT "))
		}
	}
	return a
}

// get returns the named attempt and fails the test if the attacker never reported it
// (a missing line must not pass as "blocked").
func (a *attempts) get(t *testing.T, name string) (attempt, bool) {
	t.Helper()
	at, found := a.byName[name]
	if !found {
		t.Errorf("attacker did not report attempt %q (reported: %s)", name, strings.Join(a.order, ", "))
	}
	return at, found
}

// mustFail asserts that every named attempt was reported and failed.
func (a *attempts) mustFail(t *testing.T, why string, names ...string) {
	t.Helper()
	for _, n := range names {
		if at, found := a.get(t, n); found && at.ok {
			t.Errorf("ESCAPE %s: attempt %q succeeded: %s", why, n, at.detail)
		}
	}
}

// mustFailWith asserts that every named attempt failed with one of the errnos.
func (a *attempts) mustFailWith(t *testing.T, why string, errnos []string, names ...string) {
	t.Helper()
	for _, n := range names {
		at, found := a.get(t, n)
		switch {
		case !found:
		case at.ok:
			t.Errorf("ESCAPE %s: attempt %q succeeded: %s", why, n, at.detail)
		case !contains(errnos, at.detail):
			t.Errorf("%s: attempt %q failed with %s, want %s (the error must come from the policy, not from circumstance)", why, n, at.detail, strings.Join(errnos, " or "))
		}
	}
}

// mustSucceed asserts that every named attempt was reported and succeeded (controls,
// and things a sandbox must still allow).
func (a *attempts) mustSucceed(t *testing.T, why string, names ...string) {
	t.Helper()
	for _, n := range names {
		if at, found := a.get(t, n); found && !at.ok {
			t.Errorf("%s: attempt %q failed with %s, want success", why, n, at.detail)
		}
	}
}

// mustBeDone asserts that the vector ran to its end (the process was not killed
// half-way, which could hide attempts).
func (a *attempts) mustBeDone(t *testing.T, vector string) {
	t.Helper()
	if !a.done[vector] {
		t.Errorf("attacker vector %q did not finish (no DONE line); reported: %s", vector, strings.Join(a.order, ", "))
	}
}

// withPrefix returns the names of all attempts with the prefix, in report order.
func (a *attempts) withPrefix(p string) []string {
	var out []string
	for _, n := range a.order {
		if strings.HasPrefix(n, p) {
			out = append(out, n)
		}
	}
	return out
}

func (a *attempts) dump() string {
	var b strings.Builder
	for _, n := range a.order {
		fmt.Fprintf(&b, "  %s %s\n", n, a.byName[n])
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
