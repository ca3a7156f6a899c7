package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/runner"
)

// poolOnly are the run flags the daemon's environments do not take: --pool
// refuses them rather than run without them.
var poolOnly = []string{"write", "rootfs", "image", "mount", "diff-out", "stdout-file", "stderr-file", "tmp-size", "root-size",
	"cpu-time", "file-size", "open-files", "kill-grace", "secret", "scan-egress"}

// runPooled runs o's command in a fresh environment of the daemon, which a warm
// pool of the daemon serves when one has the environment's shape (the
// workspace, template and limits), destroyed after: one request (POST /v1/run),
// whose answer comes when the command's tree is gone, the environment's
// teardown finishing in the daemon. It reports false when no daemon is
// reachable: run then runs the command here, as without --pool.
func runPooled(ctx context.Context, o *runOptions) (status int, ok bool, err error) {
	for _, f := range poolOnly {
		if o.changed(f) {
			return 0, true, fmt.Errorf("--pool: --%s is not available in the daemon's environments; drop one of them", f)
		}
	}
	if o.isolation != string(runner.IsolationNamespace) {
		return 0, true, fmt.Errorf("--pool: the daemon's environments have namespace isolation; drop --isolation %s or --pool", o.isolation)
	}
	l := o.spec.Limits
	if l.Memory == runner.Unlimited || l.Pids == runner.Unlimited {
		return 0, true, errors.New("--pool: the daemon's environments always have memory and pids limits; give a size, or drop --pool")
	}
	var d daemonFlags
	c, err := d.client()
	if err != nil {
		if noDaemonErr(err) || errors.Is(err, fs.ErrNotExist) { // no socket, or no token file beside it
			return 0, false, nil
		}
		return 0, true, err
	}
	defer c.Close()
	ws := o.spec.Workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return 0, true, err
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return 0, true, err
	}
	req := client.CreateRequest{Workspace: ws, Template: o.template,
		Limits: client.Limits{MemoryBytes: l.Memory, Pids: l.Pids, CPUs: l.CPUs, WorkspaceBytes: o.spec.Sandbox.WorkspaceSize}}
	if p := o.spec.Sandbox.Network; p != nil {
		n := &client.Network{Allow: p.Allow, MaxConns: p.Limits.MaxConns, MaxBytes: p.Limits.MaxBytes}
		for _, pr := range p.AllowPrivate {
			n.AllowPrivate = append(n.AllowPrivate, pr.String())
		}
		if len(p.DNSOverride) > 0 {
			n.DNSOverride = map[string]string{}
			for h, a := range p.DNSOverride {
				n.DNSOverride[h] = a.String()
			}
		}
		req.Network = n
	}
	ex := client.ExecRequest{Argv: o.spec.Argv, Env: o.spec.Env, Cwd: o.spec.Cwd,
		TimeoutSeconds: l.Timeout.Seconds(), OutputLimit: l.OutputLimit, OutputTotal: l.OutputTotal}
	if o.stdin != "" {
		var b []byte
		if o.stdin == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(o.stdin)
		}
		if err != nil {
			return 0, true, fmt.Errorf("--stdin: %w", err)
		}
		ex.Stdin = string(b)
	}
	res, err := c.Run(ctx, client.RunRequest{Environment: req, Exec: ex})
	if noDaemonErr(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, true, fmt.Errorf("--pool: %w", err)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		return poolStatus(res), true, enc.Encode(res)
	}
	io.WriteString(stdout, res.Stdout)
	io.WriteString(stderr, res.Stderr)
	flushOutput()
	switch {
	case res.Error != "":
		fmt.Fprintf(stderr, "agentbox: %s\n", res.Error)
	case res.Limit != "":
		fmt.Fprintf(stderr, "agentbox: run ended by the %s limit\n", res.Limit)
	}
	if res.StdoutTruncated || res.StderrTruncated {
		fmt.Fprintln(stderr, "agentbox: output truncated to --output-limit (head and tail kept)")
	}
	return poolStatus(res), true, nil
}

// poolStatus is run's exit status for a daemon's result, as runner.Result's.
func poolStatus(r *client.Result) int {
	if r.TimedOut {
		return runner.StatusTimeout
	}
	return r.ExitCode
}

// noDaemonErr reports whether err says that no daemon listens.
func noDaemonErr(err error) bool {
	var nd *client.NoDaemonError
	return errors.As(err, &nd)
}
