package image

import "context"

// Runner runs the build steps that run commands (apt, npm, go_modules, run) in a
// build sandbox. Build calls it; sandbox.BuildRunner is the real one.
//
// The sandbox's root is Root's layers (read-only, bottom first; over the host's
// system directories if Root.Host) with upper as overlayfs's upper directory and
// work as its work directory (both empty, owned by IDBase, in one directory the
// sandbox's init can walk into, on one file system). Its processes run
// as root of a user namespace mapping 0..65535 to IDBase.., so what they write
// lands in upper owned as layer files are, and its overlay uses "userxattr", so
// upper holds whiteouts and opaque marks in the form layers do (two build
// sandboxes then share host ids: each needs its own pid, mount, IPC and network
// namespaces, so neither can reach the other). Its network is
// the egress allowlist named by step.Egress. It runs step.Argv with Root.Env in
// Root.WorkingDir (or /). When RunStep returns, nothing may run in the sandbox
// or write to upper any more: Build then reads upper as the step's layer.
type Runner interface {
	RunStep(ctx context.Context, root Root, step Step, upper, work string) error
}

// Root is what a build step runs on.
type Root struct {
	Layers     []string
	Host       bool
	Env        []string
	WorkingDir string
}

// Egress names the network a step needs, as a preset of package egress (its
// allowlist entry is "preset:"+Egress()): "debian" (Debian's archive), "npm"
// (the npm registry), "go" (the Go module proxy and checksum database), or ""
// for none.
func (st Step) Egress() string {
	switch st.Kind() {
	case StepApt:
		return "debian"
	case StepNpm:
		return "npm"
	case StepGoModules:
		return "go"
	}
	return ""
}

// Argv is the command a Runner runs for a step (nil for copy, which Build does
// itself).
func (st Step) Argv() []string {
	switch st.Kind() {
	case StepApt:
		return append([]string{"sh", "-ec", "apt-get update; DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \"$@\"; apt-get clean; rm -rf /var/lib/apt/lists/*", "apt"}, st.Apt...)
	case StepNpm:
		return append([]string{"npm", "install", "--global", "--no-fund", "--no-audit"}, st.Npm...)
	case StepGoModules:
		return append([]string{"go", "mod", "download"}, st.GoModules...)
	case StepRun:
		return []string{"sh", "-ec", st.Run}
	}
	return nil
}
