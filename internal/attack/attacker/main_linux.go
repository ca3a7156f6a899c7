//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command attacker is the hostile program of the attack suite. The tests in
// internal/attack copy it into a workspace and run it inside `agentbox run` as
// `/workspace/attacker VECTOR [ARG...]`. Each vector tries one escape or abuse with raw
// system calls and reports every attempt on stdout as one line:
//
//	RESULT <attempt> ok <detail>     the call succeeded (detail says what it gave)
//	RESULT <attempt> fail <ERRNO>    the call failed with that errno
//
// followed by `DONE <vector>` when the vector ran to its end. The attacker never decides
// whether an outcome is an escape: the test does, because only the test can look at the
// host. The attacker exits 0 unless its arguments are wrong (exit 2).
//
// The attacker is careful on purpose: where an attempt could damage a host if the
// sandbox failed, it proves access without using it (it opens for write and writes
// nothing, except into files whose name contains "canary").
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// vectors maps a vector name to its implementation. Each receives the arguments after
// the vector name.
var vectors = map[string]func(args []string){}

func register(name string, fn func(args []string)) { vectors[name] = fn }

// main runs `attacker [--tag=TAG] VECTOR [ARG...]`. TAG only marks the process's argv,
// so that the test can find it (and anything it leaves behind) from the host.
func main() {
	args := os.Args[1:]
	if len(args) > 0 && strings.HasPrefix(args[0], "--tag=") {
		args = args[1:]
	}
	if len(args) < 1 {
		usage()
	}
	fn, ok := vectors[args[0]]
	if !ok {
		usage()
	}
	fn(args[1:])
	fmt.Printf("DONE %s\n", args[0])
}

func usage() {
	names := make([]string, 0, len(vectors))
	for n := range vectors {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: attacker VECTOR [ARG...]\nvectors: %s\n", strings.Join(names, " "))
	os.Exit(2)
}

// ok reports a successful attempt. detail is quoted so that it stays on one line.
func ok(attempt, format string, a ...any) {
	fmt.Printf("RESULT %s ok %q\n", attempt, fmt.Sprintf(format, a...))
}

// fail reports a failed attempt with the errno name (or the error text for non-errno
// errors, with spaces replaced so the line stays parseable).
func fail(attempt string, err error) {
	fmt.Printf("RESULT %s fail %s\n", attempt, errName(err))
}

// report calls ok or fail depending on err.
func report(attempt string, err error, format string, a ...any) {
	if err != nil {
		fail(attempt, err)
		return
	}
	ok(attempt, format, a...)
}

// attempt is printed before a call that may kill the process (SIGSYS), so the test can
// tell "killed while trying X" from "never got to X".
func attemptLine(name string) {
	fmt.Printf("ATTEMPT %s\n", name)
	os.Stdout.Sync()
}

// inInitialUserNS reports whether this process runs in the host's initial user
// namespace (its uid_map is the identity over all 2^32-1 ids).
func inInitialUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// refuseOnHost stops a vector that would harm the machine if it ran outside a sandbox
// (killing every process, unmounting /proc): outside a user namespace the sandbox is
// already broken, and the test fails on the "refused" line. The one exception is the
// test's own control run, which runs as a throw-away uid that owns nothing but its
// victim, and says so with AGENTBOX_ATTACK_CONTROL_UID.
func refuseOnHost(vector string) bool {
	euid := os.Geteuid()
	if euid != 0 && os.Getenv("AGENTBOX_ATTACK_CONTROL_UID") == strconv.Itoa(euid) {
		return false
	}
	if inInitialUserNS() {
		fmt.Printf("RESULT %s fail REFUSED_IN_INITIAL_USER_NAMESPACE\n", vector)
		return true
	}
	return false
}
