package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/policy"
)

// Prompt asks a person at a terminal: it shows each request (every item's need,
// why it is asked, its risk, the taint a release would let out, and what granting
// it gives) and reads one answer per request: y allows every item, n refuses every
// item. Anything else is asked again; the end of input leaves the request
// unanswered, which stops the session.
type Prompt struct {
	In  io.Reader
	Out io.Writer

	once sync.Once
	sc   *bufio.Scanner
}

// Approve implements Approver.
func (p *Prompt) Approve(ctx context.Context, r grant.Request) (grant.Answer, error) {
	p.once.Do(func() { p.sc = bufio.NewScanner(p.In) })
	fmt.Fprintf(p.Out, "\napproval %s:\n", r.ID)
	for _, it := range r.Items {
		fmt.Fprintf(p.Out, "  %s (%s, risk %d)\n    %s\n", it.Need, it.Tool, it.Risk.Score, it.Why)
		for _, l := range it.Taint {
			fmt.Fprintf(p.Out, "    holds %s data from %s (%s)\n", l.Class, l.Source, l.Rule)
		}
		if it.Once {
			fmt.Fprintln(p.Out, "    allowing it allows this call only")
		} else {
			fmt.Fprintf(p.Out, "    allowing it grants %s for this session\n", it.Capability)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return grant.Answer{}, err
		}
		fmt.Fprint(p.Out, "allow? [y/n] ")
		if !p.sc.Scan() {
			return grant.Answer{}, ErrUnanswered
		}
		d := policy.Decision("")
		switch strings.ToLower(strings.TrimSpace(p.sc.Text())) {
		case "y", "yes":
			d = policy.Allow
		case "n", "no":
			d = policy.Deny
		default:
			continue
		}
		a := grant.Answer{Request: r.ID, By: "user"}
		for range r.Items {
			a.Decisions = append(a.Decisions, d)
		}
		return a, nil
	}
}
