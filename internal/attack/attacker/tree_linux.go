package main

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register("deeptree", deepTree)
	register("manyfiles", manyFiles)
}

// deepTree makes /workspace/deep and N directories nested below it, each named NAME
// (default "d"; LEN, a number, names them with LEN times "n"), with a file at the
// bottom, and a file at the top of the workspace. It works one level at a time from
// directory descriptors, so no path it uses passes PATH_MAX however deep it goes.
// The host renders the tree for --diff-out afterwards.
//
// Attempts: "mkdir" (detail: the levels made), "bottom", "top".
func deepTree(args []string) {
	n, _ := strconv.Atoi(args[0])
	name := "d"
	if len(args) > 1 {
		name = args[1]
		if l, err := strconv.Atoi(name); err == nil {
			name = strings.Repeat("n", l)
		}
	}
	top()
	fd, err := unix.Open("/workspace", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fail("mkdir", err)
		return
	}
	level := "deep"
	for i := 0; i <= n; i++ {
		if err := unix.Mkdirat(fd, level, 0o755); err != nil {
			fail("mkdir", err)
			return
		}
		next, err := unix.Openat(fd, level, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			fail("mkdir", err)
			return
		}
		fd, level = next, name
	}
	ok("mkdir", "%d levels", n)
	report("bottom", writeAt(fd, "bottom.txt", "the bottom\n"), "written")
	unix.Close(fd)
}

// manyFiles makes N empty files in /workspace/many, and a file at the top.
//
// Attempts: "files" (detail: how many were made), "top".
func manyFiles(args []string) {
	n, _ := strconv.Atoi(args[0])
	top()
	if err := os.Mkdir("/workspace/many", 0o755); err != nil {
		fail("files", err)
		return
	}
	fd, err := unix.Open("/workspace/many", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fail("files", err)
		return
	}
	defer unix.Close(fd)
	for i := range n {
		f, err := unix.Openat(fd, strconv.Itoa(i), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			fail("files", err)
			return
		}
		unix.Close(f)
	}
	ok("files", "%d files", n)
}

func top() { report("top", os.WriteFile("/workspace/top.txt", []byte("top\n"), 0o644), "written") }

func writeAt(dir int, name, content string) error {
	f, err := unix.Openat(dir, name, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(f)
	_, err = unix.Write(f, []byte(content))
	return err
}
