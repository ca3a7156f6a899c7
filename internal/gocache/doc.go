// Package gocache makes and hands out the warm Go build cache that Go tasks'
// environments start from: without one, each grading and each agent's `go test`
// compiles the standard library's test dependencies again (~19 s here instead of
// ~1 s). Warm compiles (never runs) the Go tasks' starting code in sandboxes into
// a host directory; Upload copies that cache into an environment (the grader's
// private scratch), Seed into an agent's /tmp, where its diff never shows it;
// Default names the per-Go-version directory in the user's cache.
//
// It does not grade, decide which tasks to run, or trust anything an
// environment wrote back but what the compiler made from the tasks' own source:
// hidden tests are never compiled into it.
package gocache
