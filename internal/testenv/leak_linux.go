package testenv

import (
	"os"
	"strings"
)

// countFDs counts open descriptors but those on /dev/null, which package runner
// opens once and shares for the life of the process.
func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range ents {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target != os.DevNull {
			n++
		}
	}
	return n
}

// children lists this process's children, living or zombie, across all its threads.
func children() []string {
	tasks, _ := os.ReadDir("/proc/self/task")
	var kids []string
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		kids = append(kids, strings.Fields(string(b))...)
	}
	return kids
}

// fdTargets names what each open descriptor refers to, for the leak report.
func fdTargets() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"="+l)
	}
	return strings.Join(out, " ")
}
