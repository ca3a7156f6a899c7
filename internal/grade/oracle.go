package grade

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/task"
)

// OracleResult is one task's check by Oracle.
type OracleResult struct {
	Task      string  `json:"task"`
	OK        bool    `json:"ok"`
	Reference Verdict `json:"reference"`
	Empty     Verdict `json:"empty"`
	Problem   string  `json:"problem,omitempty"`
	// Duration is the time both gradings took.
	Duration time.Duration `json:"-"`
}

// Oracle checks that each task can tell a fix from no fix: its reference
// solution must resolve it, with every test id run (a missing one leads the
// problem), and the empty patch must not (nor fail for the harness's own
// reasons). each, if set, hears every result as it is decided. The
// error is a reference that cannot be read, a caller's mistake, or ctx's end.
func Oracle(ctx context.Context, svc Service, owner env.Owner, tasks []*task.Task, o Options, each func(OracleResult)) ([]OracleResult, error) {
	var results []OracleResult
	for _, t := range tasks {
		start := time.Now()
		r := OracleResult{Task: t.ID}
		ref, err := t.ReadReference()
		if err != nil {
			return results, err
		}
		if r.Reference, err = Grade(ctx, svc, owner, t, ref, o); err != nil {
			return results, err
		}
		if r.Empty, err = Grade(ctx, svc, owner, t, nil, o); err != nil {
			return results, err
		}
		if ctx.Err() != nil {
			return results, context.Cause(ctx)
		}
		switch {
		case r.Reference.InfraError != "" || r.Empty.InfraError != "":
			r.Problem = "infra_error: " + r.Reference.InfraError + r.Empty.InfraError
		case r.Reference.HarnessError != "":
			r.Problem = "harness_error: " + r.Reference.HarnessError
		case len(r.Reference.FailToPass.Missing)+len(r.Reference.PassToPass.Missing) > 0:
			missing := slices.Concat(r.Reference.FailToPass.Missing, r.Reference.PassToPass.Missing)
			r.Problem = fmt.Sprintf("with the reference, %d test ids never ran (missing: %s); check that they map onto what the framework reports (see the test log)",
				len(missing), strings.Join(missing[:min(len(missing), 5)], ", "))
		case !r.Reference.Resolved:
			r.Problem = "the reference does not resolve the task: " + strings.Join(slices.Concat(r.Reference.FailToPass.Failed, r.Reference.PassToPass.Failed, r.Reference.Problems), "; ")
		case r.Empty.Resolved:
			r.Problem = "the empty patch resolves the task: its tests do not test the change"
		default:
			r.OK = true
		}
		r.Duration = time.Since(start)
		results = append(results, r)
		if each != nil {
			each(r)
		}
	}
	return results, nil
}
