package sandbox

import "strings"

// Check is one mechanism Probe tried.
type Check struct {
	Name string
	// Required: the namespace level cannot run without it (Start fails closed).
	Required bool
	OK       bool
	// Detail says what was found ("ABI 7", "v1: memory pids cpu cpuacct freezer")
	// or why it failed.
	Detail string
}

// Report is what this host supports, mechanism by mechanism.
type Report struct {
	Checks []Check
	// LandlockABI is the best Landlock ABI the kernel offers (0: none).
	LandlockABI int
	// CgroupVersion is 1 or 2, the hierarchy sandboxes' cgroups go in (0: none).
	CgroupVersion int
	// Runsc is the path of gVisor's runsc on PATH, or "".
	Runsc string
}

// Missing lists the required mechanisms that failed.
func (r Report) Missing() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Required && !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// Err returns a *MissingError (matching ErrUnsupported) naming every required
// mechanism that failed, or nil when the namespace level can run here.
func (r Report) Err() error {
	m := r.Missing()
	if len(m) == 0 {
		return nil
	}
	return &MissingError{Mechanism: strings.Join(m, ", ")}
}
