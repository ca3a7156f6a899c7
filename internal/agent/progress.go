package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/internal/tool"
)

// Fingerprint identifies a step by its action, its observation and the workspace
// version after it. Parts of the observation that differ between identical calls
// — observed_at, cost, and data fields ending in _ms (durations) — do not count.
func Fingerprint(d Decision, e tool.Envelope, version string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", d.Tool, canonicalJSON(d.Args), d.ArgsError)
	fmt.Fprintf(h, "%t\x00%s\x00%s\x00", e.OK, stableData(e.Data), e.Text)
	if e.Error != nil {
		fmt.Fprintf(h, "%s\x00%s\x00", e.Error.Code, e.Error.Message)
	}
	for _, r := range e.Refs {
		fmt.Fprintf(h, "%s\x00", r.Ref)
	}
	fmt.Fprintf(h, "%s", version)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func canonicalJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// stableData drops top-level durations from a tool's data.
func stableData(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return canonicalJSON(raw)
	}
	for k := range m {
		if strings.HasSuffix(k, "_ms") {
			delete(m, k)
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// detector finds sessions that repeat themselves.
type detector struct {
	window, errRepeat int
	fps               []string
	errs              []string
}

func newDetector(l Limits) *detector {
	return &detector{window: l.NoProgressWindow, errRepeat: l.RepeatedErrors}
}

// observe takes one step and says why the session is not progressing, or "".
func (d *detector) observe(fp string, e tool.Envelope) string {
	d.fps = append(d.fps, fp)
	f := d.fps
	n := len(f)
	if n >= d.window && allEqual(f[n-d.window:]) {
		return fmt.Sprintf("the same action and observation %d times in a row, with no change to the workspace", d.window)
	}
	if n >= 4 && f[n-1] == f[n-3] && f[n-2] == f[n-4] && f[n-1] != f[n-2] {
		return "alternating between two actions (A-B-A-B) with the same observations and no change to the workspace"
	}
	if e.OK || e.Error == nil {
		d.errs = d.errs[:0]
		return ""
	}
	d.errs = append(d.errs, string(e.Error.Code)+": "+e.Error.Message)
	if m := len(d.errs); m >= d.errRepeat && allEqual(d.errs[m-d.errRepeat:]) {
		return fmt.Sprintf("the same error %d times in a row: %s", d.errRepeat, d.errs[m-1])
	}
	return ""
}

func allEqual(s []string) bool {
	for _, x := range s[1:] {
		if x != s[0] {
			return false
		}
	}
	return true
}
