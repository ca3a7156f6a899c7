package testenv

import (
	"os"
	"strings"
)

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
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
