package grade

import (
	"encoding/json"

	"github.com/agentbox/agentbox/internal/env"
)

var owner = env.Owner{Tenant: "grader"}

// newFile is a git diff creating name with one line.
func newFile(name, line string) []byte {
	return []byte("diff --git a/" + name + " b/" + name + "\nnew file mode 100644\n--- /dev/null\n+++ b/" +
		name + "\n@@ -0,0 +1 @@\n+" + line + "\n")
}

func dump(v Verdict) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
