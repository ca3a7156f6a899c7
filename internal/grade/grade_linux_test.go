package grade

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/task"
)

func builtin(t *testing.T, id string) *task.Task {
	t.Helper()
	if suiteErr != nil {
		t.Fatalf("Builtin: %v", suiteErr)
	}
	for _, tk := range suiteTasks {
		if tk.ID == id {
			return tk
		}
	}
	t.Fatalf("no built-in task %s", id)
	return nil
}

func gradeIt(t *testing.T, m env.Service, tk *task.Task, patch []byte, o Options) Verdict {
	t.Helper()
	v, err := Grade(t.Context(), m, owner, tk, patch, o)
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	if v.InfraError != "" {
		t.Fatalf("infra error: %s\n%s", v.InfraError, dump(v))
	}
	return v
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "task", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
