// Package workspace is the host side of a sandbox's /workspace.
//
// It does two things. Diff reads the private upper layer of a run's overlay (and the
// shared lower layer it covers) and renders every change as a git-style patch that
// `git apply` reproduces on a copy of the lower directory; DiffTrees does the same
// for two plain directories. Root offers the file operations an environment API
// needs (read a range, write atomically, list, stat, remove, mkdir, tar in and out,
// replace a unique string, apply a patch all-or-nothing) on a workspace directory
// whose contents are hostile: sandboxed code may have filled it with symlinks to host
// files, hardlinks, fifos, devices, huge files, deep trees and odd names, and may
// keep changing it while agentbox works.
//
// It never follows a link out of the workspace. Root resolves every path through
// os.Root (component by component, O_NOFOLLOW, symlinks resolved in user space and
// refused when they leave the root); Diff goes further and follows no symlink at
// all: it walks both trees by directory descriptor with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS) and reads symlinks as text. Paths from callers are checked
// lexically first (ErrEscape, ErrInvalidPath) only to give clear errors; the
// boundary is the kernel-side resolution, not the string check.
//
// It deliberately does not mount anything (the sandbox's init mounts the overlay),
// does not track directories, ownership or permission bits other than the
// executable bit (git cannot express them), does not diff .git directories unless
// asked, and does not run git. Errors name paths relative to the workspace, never
// the host path of the workspace.
package workspace
