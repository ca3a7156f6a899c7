package gocache

import (
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/task"
)

// Where a Go task's shared caches appear in its environments (the grader's and
// the agent's): the warm build cache copy-on-write, the module cache read-only.
const (
	CacheMount    = "/opt/agentbox/gocache"
	ModCacheMount = "/opt/agentbox/gomodcache"
)

// Mounts returns the mounts and the variables that give a Go task's environment
// the shared caches: the warm build cache (Warm) as a copy-on-write mount (every
// write goes to a private layer that ends with the environment, so nothing a run
// compiles or plants reaches another), the module cache (DownloadModules)
// read-only. Either may be "" for none. The variables override the private ones
// of Task.Env. For other languages it returns nothing.
func Mounts(t *task.Task, cache, modCache string) ([]env.Mount, []string) {
	if t.Language != task.Go {
		return nil, nil
	}
	var mounts []env.Mount
	var vars []string
	if cache != "" {
		mounts = append(mounts, env.Mount{Source: cache, Target: CacheMount, Mode: env.MountCopyOnWrite})
		vars = append(vars, "GOCACHE="+CacheMount)
	}
	if modCache != "" {
		mounts = append(mounts, env.Mount{Source: modCache, Target: ModCacheMount, Mode: env.MountReadOnly})
		vars = append(vars, "GOMODCACHE="+ModCacheMount)
	}
	return mounts, vars
}
