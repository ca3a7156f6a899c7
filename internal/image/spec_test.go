package image

import (
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	sp, err := ParseSpec([]byte(`
base:
  debian: bookworm
steps:
  - apt: [python3, python3-pytest=7.2.1-2]
  - npm: ["@types/node@20.11.5", typescript@5.4.5]
  - go_modules: [golang.org/x/text@v0.14.0, github.com/google/go-cmp@v0.7.0]
  - copy: {src: ./requirements.txt, dst: /opt/app/requirements.txt}
  - run: pip install -r /opt/app/requirements.txt
env:
  PYTHONDONTWRITEBYTECODE: "1"
workdir: /workspace
`))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Base.Debian == nil || sp.Base.Debian.Suite != "bookworm" || len(sp.Steps) != 5 || sp.Env["PYTHONDONTWRITEBYTECODE"] != "1" {
		t.Fatalf("parsed %+v", sp)
	}
	kinds := []string{StepApt, StepNpm, StepGoModules, StepCopy, StepRun}
	for i, st := range sp.Steps {
		if st.Kind() != kinds[i] {
			t.Errorf("steps[%d] is %q, want %q", i, st.Kind(), kinds[i])
		}
	}
	if sp, err := ParseSpec([]byte("base:\n  debian: {suite: trixie, variant: essential, include: [hello]}\n")); err != nil || sp.Base.Debian.Variant != "essential" {
		t.Errorf("debian mapping: %+v, %v", sp, err)
	}
	for _, c := range []struct{ spec, want string }{
		{"", "empty"},
		{"steps: []", "base: missing"},
		{"base: {debian: bookworm, host: true}", "only one"},
		{"base: {image: Not/A/Name}", "base.image"},
		{"base: {image: nope:thing/x}", "base.image"},
		{"base: {host: true}\nsteps: [{apt: [python3], run: ls}]", "exactly one"},
		{"base: {host: true}\nsteps: [{}]", "exactly one"},
		{"base: {debian: bookworm}\nsteps: [{apt: [Python3]}]", "steps[0].apt[0]"},
		{"base: {host: true}\nsteps: [{apt: [python3]}]", "steps[0].apt: a host base"},
		{"base: {host: true}\nsteps: [{npm: [left-pad]}]", "exact version"},
		{"base: {host: true}\nsteps: [{npm: [left-pad@^1.3.0]}]", "exact version"},
		{"base: {host: true}\nsteps: [{go_modules: [golang.org/x/text@latest]}]", "exact version"},
		{"base: {host: true}\nsteps: [{copy: {src: ../secret, dst: /x}}]", "copy.src"},
		{"base: {host: true}\nsteps: [{copy: {src: /etc/passwd, dst: /x}}]", "copy.src"},
		{"base: {host: true}\nsteps: [{copy: {src: a, dst: relative}}]", "copy.dst"},
		{"base: {host: true}\nenv: {BAD-NAME: x}", "env.BAD-NAME"},
		{"base: {host: true}\nworkdir: rel", "workdir"},
		{"base: {host: true}\nstepz: []", "unknown fields"},
		{"base: {debian: {suite: bookworm, varient: minbase}}", "varient"},
		{"base: {debian: {suite: bookworm, variant: huge}}", "variant"},
		{"base: {debian: {suite: bookworm, mirror: 'ftp://x'}}", "mirror"},
		{"base: {debian: Bookworm}", "suite"},
	} {
		_, err := ParseSpec([]byte(c.spec))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q) = %v, want an error naming %q", c.spec, err, c.want)
		}
	}
	// Every problem is reported at once.
	_, err = ParseSpec([]byte("base: {host: true}\nsteps: [{npm: [a]}, {go_modules: [b]}]\nworkdir: x"))
	if n := strings.Count(err.Error(), "build spec:"); n != 3 {
		t.Errorf("%d problems reported, want 3: %v", n, err)
	}
}

func TestStepArgv(t *testing.T) {
	st := Step{Apt: []string{"python3", "git"}}
	argv := st.Argv()
	if argv[0] != "sh" || argv[len(argv)-2] != "python3" || argv[len(argv)-1] != "git" || st.Egress() != "debian" {
		t.Errorf("apt argv %q, egress %q", argv, st.Egress())
	}
	if argv := (Step{Run: "make test"}).Argv(); strings.Join(argv, " ") != "sh -ec make test" {
		t.Errorf("run argv %q", argv)
	}
	if e := (Step{Run: "x"}).Egress(); e != "" {
		t.Errorf("run egress %q, want none", e)
	}
}
