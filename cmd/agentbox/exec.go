package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/client"
)

func execCmd() *cobra.Command {
	var (
		d       daemonFlags
		req     client.ExecRequest
		stdin   string
		asJSON  bool
		tty     bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "exec [flags] ID -- CMD [ARG...]",
		Short: "Run a command in an environment, streaming its output",
		Long: `Exec runs CMD (no shell) in the environment ID on the daemon and streams its output
as it happens. It exits with the command's status (124 after a timeout, 128+N after
death by signal N); an interrupt is forwarded to the command. With --json the command
runs synchronously and one JSON result is printed instead. Where stdout or stderr is a
terminal, the command's control characters and escape sequences are shown escaped,
not executed (SGR colours pass); --raw-output passes them as they are.

With --tty the command runs on a terminal of the sandbox's own (never yours) and
your terminal is connected to it as by agentbox shell: raw while it runs, its
output one stream passed as it is, window size changes passed on.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(execArgv(args)) == 0 {
				return errors.New("use agentbox exec [flags] ID -- CMD [ARG...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			req.Argv = execArgv(args)
			req.TimeoutSeconds = timeout.Seconds()
			c, err := d.client()
			if err != nil {
				return err
			}
			if tty {
				if asJSON || stdin != "" {
					return errors.New("--tty connects your terminal to the command: drop --json and --stdin")
				}
				return streamTerminal(cmd.Context(), c, id, req)
			}
			if asJSON {
				if stdin != "" {
					b, err := readInput(stdin)
					if err != nil {
						return err
					}
					req.Stdin = string(b)
				}
				res, err := c.Exec(cmd.Context(), id, req)
				if err != nil {
					return err
				}
				if err := printJSON(res); err != nil {
					return err
				}
				return exitStatus(res)
			}
			return streamExec(cmd.Context(), c, id, req, stdin)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	d.add(f)
	f.StringArrayVar(&req.Env, "env", nil, "KEY=VALUE added to the environment (repeatable)")
	f.StringVar(&req.Cwd, "cwd", "", "directory relative to the workspace to start in")
	f.DurationVar(&timeout, "timeout", 0, "wall-clock limit (0: server default)")
	f.StringVar(&stdin, "stdin", "", "file to feed as standard input, or - for agentbox's own")
	f.BoolVar(&asJSON, "json", false, "run synchronously and print the result as JSON")
	f.BoolVar(&tty, "tty", false, "run on a terminal of the sandbox's own, connected to yours")
	return cmd
}

// execArgv is the command after ID. Flag parsing stops at ID, so a "--" after it
// arrives as an argument.
func execArgv(args []string) []string {
	if len(args) < 2 {
		return nil
	}
	argv := args[1:]
	if argv[0] == "--" {
		argv = argv[1:]
	}
	return argv
}

// streamExec starts the command, feeds stdin, forwards interrupts and copies its
// events to stdout and stderr until it exits.
func streamExec(ctx context.Context, c *client.Client, id string, req client.ExecRequest, stdin string) error {
	proc, err := c.Start(ctx, id, req)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			name := "INT"
			if s == syscall.SIGTERM {
				name = "TERM"
			}
			c.Signal(context.WithoutCancel(ctx), id, proc, name)
		}
	}()
	if stdin != "" {
		go feedStdin(ctx, c, id, proc, stdin)
	} else {
		c.WriteStdin(ctx, id, proc, nil, true)
	}
	st := c.Events(ctx, id, proc, 0)
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			return err
		}
		switch ev.Kind {
		case client.EventStdout:
			stdout.Write(ev.Data)
		case client.EventStderr:
			stderr.Write(ev.Data)
		case client.EventExit:
			flushOutput() // the command's streams have ended; what follows is agentbox's
			if ev.Result != nil && ev.Result.Error != "" {
				fmt.Fprintf(stderr, "agentbox: %s\n", ev.Result.Error)
			}
			return exitStatus(ev.Result)
		}
	}
}

func feedStdin(ctx context.Context, c *client.Client, id, proc, from string) {
	var r io.Reader = os.Stdin
	if from != "-" {
		f, err := os.Open(from)
		if err != nil {
			fmt.Fprintf(stderr, "agentbox: stdin: %v\n", err)
			c.WriteStdin(ctx, id, proc, nil, true)
			return
		}
		defer f.Close()
		r = f
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if werr := c.WriteStdin(ctx, id, proc, buf[:n], false); werr != nil {
				return
			}
		}
		if err != nil {
			c.WriteStdin(ctx, id, proc, nil, true)
			return
		}
	}
}

// exitStatus turns a result into agentbox's exit status (as `agentbox run`).
func exitStatus(r *client.Result) error {
	if r == nil {
		return exitError{125}
	}
	status := r.ExitCode
	if r.TimedOut {
		status = 124
	}
	if status != 0 {
		return exitError{status}
	}
	return nil
}

// readInput reads a file, or standard input for "-".
func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}
