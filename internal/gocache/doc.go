// Package gocache makes and hands out the shared Go caches that Go tasks'
// environments start from. Without a warm build cache each grading and each
// agent's `go test` compiles the standard library's test dependencies again (~19
// s here instead of ~1 s): Warm compiles (never runs) the Go tasks' starting code
// in sandboxes into a host directory, and Default names the per-Go-version one in
// the user's cache. A task with dependencies builds offline from a module cache
// that DownloadModules fills on the host from a module proxy, checked against the
// task's go.sum. Mounts shows both in an environment (the grader's or an agent's)
// outside /workspace, so its diff never shows them: the build cache
// copy-on-write, the module cache read-only.
//
// It does not grade, decide which tasks to run, or trust anything an
// environment wrote back but what the compiler made from the tasks' own source:
// hidden tests are never compiled into it, and nothing of a task runs on the host.
package gocache
