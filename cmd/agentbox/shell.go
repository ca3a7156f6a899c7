package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentbox/agentbox/client"
)

// hangupGrace is how long a command may take to exit after the hangup that HUP
// or TERM to agentbox sends it, before it is killed.
const hangupGrace = 2 * time.Second

// loginShell is what `agentbox shell` runs without a command: bash where the
// environment has it, else sh.
var loginShell = []string{"/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l"}

func shellCmd() *cobra.Command {
	var (
		d       daemonFlags
		req     client.ExecRequest
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "shell [flags] ID [-- CMD [ARG...]]",
		Short: "Open an interactive shell (or CMD) on a terminal in an environment",
		Long: `Shell runs a login shell (bash if the environment has it, else sh), or CMD, in
the environment ID on a terminal of the sandbox's own, and connects your terminal
to it: your terminal is raw until the shell ends (restored when it exits, on an
error, and on HUP or TERM to agentbox, which hang the shell up), keys go to the shell, its output comes back as it is, and a resized
window resizes its terminal. It exits with the shell's status; --timeout (24h)
ends the session. The sandbox never gets your terminal itself: only the bytes
you type. Same as agentbox exec --tty ID -- CMD.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Argv = execArgv(args)
			if len(req.Argv) == 0 {
				req.Argv = loginShell
			}
			req.TimeoutSeconds = timeout.Seconds()
			c, err := d.client()
			if err != nil {
				return err
			}
			return streamTerminal(cmd.Context(), c, args[0], req)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	d.add(f)
	f.StringArrayVar(&req.Env, "env", nil, "KEY=VALUE added to the environment (repeatable)")
	f.StringVar(&req.Cwd, "cwd", "", "directory relative to the workspace to start in")
	// An interactive session outlasts a command's default 10 minutes; the
	// environment's TTL and idle timeout still bound it.
	f.DurationVar(&timeout, "timeout", 24*time.Hour, "wall-clock limit of the session")
	return cmd
}

// streamTerminal runs req on a terminal of the environment's own and connects
// agentbox's stdin and stdout to it: stdin raw (if a terminal) and restored on
// every way out, keys typed in through the API, the terminal's bytes written out
// unescaped (the user asked for a terminal), window size changes passed on, and
// HUP or TERM to agentbox a hangup of the command (then SIGKILL after
// hangupGrace). It returns the command's exit status.
func streamTerminal(ctx context.Context, c *client.Client, id string, req client.ExecRequest) error {
	req.TTY = true
	in, out := int(os.Stdin.Fd()), int(os.Stdout.Fd())
	if w, h, err := term.GetSize(out); err == nil && w > 0 && h > 0 {
		req.Rows, req.Cols = h, w
	} else if w, h, err := term.GetSize(in); err == nil && w > 0 && h > 0 {
		req.Rows, req.Cols = h, w
	}
	if t := os.Getenv("TERM"); t != "" && !hasEnv(req.Env, "TERM") {
		req.Env = append(req.Env, "TERM="+t)
	}
	proc, err := c.Start(ctx, id, req)
	if err != nil {
		return err
	}
	if term.IsTerminal(in) {
		old, err := term.MakeRaw(in)
		if err != nil {
			c.Signal(context.WithoutCancel(ctx), id, proc, "KILL")
			return fmt.Errorf("make the terminal raw: %w", err)
		}
		defer term.Restore(in, old)
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGHUP, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			if s == syscall.SIGWINCH {
				if w, h, err := term.GetSize(out); err == nil && w > 0 && h > 0 {
					c.Resize(context.WithoutCancel(ctx), id, proc, h, w)
				}
				continue
			}
			// A hangup, as when a terminal closes (an interactive shell ignores
			// TERM); what ignores that too is killed after a grace.
			c.Signal(context.WithoutCancel(ctx), id, proc, "HUP")
			time.AfterFunc(hangupGrace, func() { c.Signal(context.WithoutCancel(ctx), id, proc, "KILL") })
		}
	}()
	go typeInto(ctx, c, id, proc)

	st := c.Events(ctx, id, proc, 0)
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			return err
		}
		switch ev.Kind {
		case client.EventStdout, client.EventStderr:
			os.Stdout.Write(ev.Data)
		case client.EventExit:
			if ev.Result != nil && ev.Result.Error != "" {
				fmt.Fprintf(stderr, "\r\nagentbox: %s\r\n", ev.Result.Error)
			}
			return exitStatus(ev.Result)
		}
	}
}

// typeInto sends what agentbox reads from its stdin to the command's terminal
// as it arrives, until stdin ends or the command does.
func typeInto(ctx context.Context, c *client.Client, id, proc string) {
	buf := make([]byte, 4096)
	for {
		n, err := os.Stdin.Read(buf)
		if n > 0 && c.WriteStdin(ctx, id, proc, buf[:n], false) != nil {
			return // the command is over
		}
		if err != nil {
			return // a terminal has no end of input: ^D is a byte like any other
		}
	}
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if len(kv) > len(key) && kv[:len(key)+1] == key+"=" {
			return true
		}
	}
	return false
}
