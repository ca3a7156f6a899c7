package nsinit

import (
	"errors"

	"github.com/agentbox/agentbox/internal/landlock"
	"github.com/agentbox/agentbox/internal/seccomp"
)

// confine installs the Spec's Landlock ruleset, then its seccomp filter, on every
// thread; the command inherits both. Seccomp comes last because its filter may deny
// calls the steps before it make. It returns what Landlock enforced.
//
// Landlock below ABI 8 puts each thread in a domain of its own, so with signal
// scoping only this thread (the one that starts the command) may signal the
// sandbox's processes: the supervisor loop runs on it.
func confine(s *Spec, st *status) (landlock.Applied, error) {
	applied, err := landlock.Restrict(s.Landlock)
	if err != nil {
		return applied, at("landlock", err)
	}
	st.mark("landlock")
	if len(s.Seccomp) == 0 {
		return applied, at("seccomp", errors.New("no filter in config"))
	}
	if err := seccomp.Install(s.Seccomp); err != nil {
		return applied, at("seccomp", err)
	}
	st.mark("seccomp")
	return applied, nil
}
