package agent

import "fmt"

// ModeLong is the crash campaign's session (seed 004: long tasks): dozens of
// steps mixing writes, reads, str_replace patches, listings, test runs and one
// ledger.append (LedgerTool), an effect outside the sandbox that must happen
// exactly once. It works in any workspace, on files under long/, and finishes
// with task.finish once the tests pass. A failed ledger.append (a person
// resolved it as failed) is made again; a refused task.finish (a resumed
// environment has no test record) runs the tests first.
const ModeLong = "long"

// LongItems is how many files ModeLong writes and patches.
const LongItems = 8

func longScript(session string) []Decision {
	var out []Decision
	for k := range LongItems {
		path := fmt.Sprintf("long/item%d.txt", k)
		out = append(out,
			call("fs.write", map[string]any{"path": path, "content": fmt.Sprintf("item %d: todo\n", k)}),
			call("fs.read", map[string]any{"path": path}),
			call("patch.apply", map[string]any{"path": path, "old": "todo", "new": "done"}))
		if k%4 == 3 {
			out = append(out, call("fs.list", map[string]any{"path": "long"}), call("test.run", map[string]any{}))
		}
		if k == 4 {
			out = append(out, call("ledger.append", map[string]any{"entry": "release " + session}))
		}
	}
	return append(out, call("test.run", map[string]any{}),
		call("task.finish", map[string]any{"summary": fmt.Sprintf("wrote and patched %d files, released once", LongItems)}))
}

func (p *Scripted) long(s *State) Decision {
	script := longScript(s.Session)
	i, refused := 0, 0
	var last Turn
	for n, t := range s.History {
		switch {
		case !t.Result.OK && t.Decision.Tool == "ledger.append":
		case !t.Result.OK && t.Decision.Tool == "task.finish":
			refused++
		case t.Decision.Tool == "test.run" && n > 0 && !s.History[n-1].Result.OK && s.History[n-1].Decision.Tool == "task.finish":
		default:
			i++
		}
		last = t
	}
	switch {
	case refused > 3:
		return stopAfter(last, "task.finish was refused 4 times")
	case len(s.History) > 0 && !last.Result.OK && last.Decision.Tool == "task.finish":
		return call("test.run", map[string]any{})
	case i >= len(script):
		return Decision{Stop: true, Reason: "the script is over"}
	}
	return script[i]
}
