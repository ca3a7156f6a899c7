package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/sandbox"
)

type runOptions struct {
	spec      runner.Spec
	mounts    []string
	stdin     string
	isolation string
	json      bool
	net       networkFlags
	template  string
	image     string
	stateDir  string
	pool      bool              // run in the daemon's environment when one is reachable
	changed   func(string) bool // whether a flag was given
}

func runCmd() *cobra.Command {
	cmd, _ := newRunCmd()
	return cmd
}

// newRunCmd returns the run command and the options its flags fill in.
func newRunCmd() (*cobra.Command, *runOptions) {
	o := &runOptions{}
	l := &o.spec.Limits
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...]",
		Short: "Run one command in a sandbox under limits",
		Long: `Run executes CMD directly (no shell) with a minimal environment (PATH, HOME,
LANG=C.UTF-8, TMPDIR, plus --env), resource limits, captured and streamed output, and a
kill that takes the whole process tree when it times out, is cancelled or exceeds a limit.

Exit status: the command's own; 128+N if it died by signal N; 124 if it timed out;
125 if agentbox failed; 126 if CMD is not executable; 127 if it was not found.
With --json, one JSON object describing the run is printed on stdout instead of the
command's output.

The command never gets agentbox's terminal: its stdout and stderr are pipes that
agentbox reads, and with --stdin - on a terminal it reads a pipe that agentbox fills
from the terminal (end the input with Ctrl-D), so it cannot change the terminal's
modes, size or owner. Where agentbox's stdout or stderr is a terminal, the command's
control characters and escape sequences are shown escaped (\e]52;c;…\a, \e[6n),
not executed; SGR colours pass, and a colour left on is reset at the end.
--raw-output passes them as they are. Output to a pipe or a file, --stdout-file and
--stderr-file keep the exact bytes; --json is the same JSON value on a terminal too.

The sandbox has no network but its own loopback unless --allow-host names what it may
reach: then an egress proxy on the host, 127.0.0.1:3128 inside (HTTP_PROXY and
HTTPS_PROXY point there), is its one way out, and decides each connection by name;
DNS inside resolves nothing, and a client that ignores the proxy finds no route.
--json lists every connection under "network". --secret NAME@HOST gives the command
a placeholder in $NAME that the proxy swaps for agentbox's own $NAME in requests to
HOST only (over HTTPS, which it intercepts for that host alone with a CA made for
this run and trusted inside).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("no command given: use agentbox run [flags] -- CMD [ARG...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.spec.Argv = args
			// An explicit 0 lifts a default limit; no flag keeps it.
			if cmd.Flags().Changed("memory") && l.Memory == 0 {
				l.Memory = runner.Unlimited
			}
			if cmd.Flags().Changed("pids") && l.Pids == 0 {
				l.Pids = runner.Unlimited
			}
			o.changed = cmd.Flags().Changed
			if !cmd.Flags().Changed("pool") && os.Getenv("AGENTBOX_POOL") == "1" {
				o.pool = true
			}
			return runMain(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.StringVar(&o.spec.Workspace, "workspace", "", "host directory to work in (default: the current directory)")
	f.StringVar(&o.spec.Cwd, "cwd", "", "directory relative to the workspace to start in")
	f.StringVar(&o.stdin, "stdin", "", "file to feed as standard input, or - for agentbox's own, copied through a pipe (default: /dev/null)")
	f.StringArrayVar(&o.spec.Env, "env", nil, "KEY=VALUE added to the minimal environment (repeatable)")
	f.DurationVar(&l.Timeout, "timeout", runner.DefaultTimeout, "wall-clock limit")
	f.DurationVar(&l.CPUTime, "cpu-time", 0, "CPU time limit per process (default: --timeout times the number of CPUs)")
	f.Var(sizeValue{&l.Memory}, "memory", "memory limit, e.g. 512M (namespace isolation: default half the host's memory, at most 4G; 0: none)")
	f.Var(countValue{&l.Pids}, "pids", "limit on processes and threads (namespace isolation: default 1024; 0: none)")
	f.Float64Var(&l.CPUs, "cpus", 0, "CPU quota in cores, e.g. 0.5 (namespace isolation; 0: none)")
	f.Var(sizeValue{&l.OutputLimit}, "output-limit", "bytes of each stream kept in the result, head and tail (default 1M)")
	f.Var(sizeValue{&l.OutputTotal}, "output-total", "bytes of output over both streams after which the run is killed (default 64M)")
	f.Var(sizeValue{&l.FileSize}, "file-size", "largest file the command may write (default 1G)")
	f.Var(countValue{&l.OpenFiles}, "open-files", "open file limit per process (default 1024)")
	f.DurationVar(&l.KillGrace, "kill-grace", runner.DefaultKillGrace, "time between SIGTERM and SIGKILL when a run is ended")
	f.StringVar(&o.spec.StdoutFile, "stdout-file", "", "also write the full stdout to this file (up to --output-total)")
	f.StringVar(&o.spec.StderrFile, "stderr-file", "", "also write the full stderr to this file (up to --output-total)")
	f.StringVar(&o.isolation, "isolation", string(runner.IsolationNamespace), "namespace (a sandbox; fails closed if the host lacks a mechanism), gvisor (the same sandbox in gVisor's user-space kernel, runsc; no --write, --rootfs, --mount, --allow-host) or process (rlimits and a total kill only)")
	f.BoolVar(&o.json, "json", false, "print one JSON object describing the run instead of streaming output")
	f.BoolVar(&o.spec.Sandbox.WriteWorkspace, "write", false, "bind the workspace read-write instead of copy-on-write (namespace isolation)")
	f.StringVar(&o.spec.Sandbox.RootFS, "rootfs", "", "system tree to use instead of the host's /usr, /bin, /lib (namespace isolation)")
	f.StringVar(&o.template, "template", "", "run on the template NAME (an image built with agentbox template build) as the root file system instead of the host's system directories (namespace isolation, as root)")
	f.StringVar(&o.image, "image", "", "run on the image REF (a name or an id in the image store) as the root file system (namespace isolation, as root)")
	f.StringVar(&o.stateDir, "state-dir", config.DefaultStateDir(), "agentbox's state directory, whose images/ is the image store")
	f.StringArrayVar(&o.mounts, "mount", nil, "HOST:PATH[:MODE] shows the host directory HOST at PATH (outside /workspace, /tmp and the system directories); MODE ro (default), rw (writes reach HOST) or cow (writes go to a private layer that ends with the run); repeatable (namespace isolation)")
	f.StringVar(&o.spec.Sandbox.DiffOut, "diff-out", "", "write the workspace changes as a unified diff to this file; what it cannot carry is named on '# agentbox:' lines (namespace isolation)")
	f.Var(sizeValue{&o.spec.Sandbox.TmpSize}, "tmp-size", "size of the sandbox's /tmp (namespace isolation; default 256M)")
	f.Var(sizeValue{&o.spec.Sandbox.WorkspaceSize}, "workspace-size", "how much the command may write to the copy-on-write workspace, held in memory (namespace isolation, as root; default 1G)")
	f.Var(sizeValue{&o.spec.Sandbox.RootSize}, "root-size", "how much the command may write to the --template or --image root (its private layer, held in memory; namespace isolation, as root; default 1G)")
	f.BoolVar(&o.pool, "pool", false, "run in a fresh environment of the agentbox daemon (--server, $AGENTBOX_SERVER or the local socket), from its warm pool when one has the workspace, template and limits asked for; without a reachable daemon, run here (default: $AGENTBOX_POOL=1)")
	o.net.add(f)
	return cmd, o
}

// validate checks what the flags alone cannot.
func (o *runOptions) validate() error {
	o.spec.Isolation = runner.Isolation(o.isolation)
	for _, kv := range o.spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("--env %q: use KEY=VALUE", kv)
		}
	}
	var err error
	if o.spec.Sandbox.Network, err = o.net.policy(os.Getenv); err != nil {
		return err
	}
	if o.spec.Sandbox.RootSize != 0 && o.template == "" && o.image == "" {
		return errors.New("--root-size bounds the writes to an image root: give --template NAME or --image REF (without one the root is the host's, read-only)")
	}
	for _, s := range o.mounts {
		m, err := sandbox.ParseMount(s)
		if err != nil {
			return err
		}
		o.spec.Sandbox.Mounts = append(o.spec.Sandbox.Mounts, m)
	}
	return o.spec.Validate()
}

func runMain(ctx context.Context, o *runOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.pool {
		status, ok, err := runPooled(ctx, o)
		if err != nil {
			return err
		}
		if ok {
			return exitError{status}
		}
	}
	im, err := openImage(o.stateDir, o.template, o.image)
	if err != nil {
		return err
	}
	if im != nil {
		defer im.Close()
		o.spec.Sandbox.Image = im
		if err := o.spec.Validate(); err != nil {
			return err
		}
	}
	switch o.stdin {
	case "":
	case "-":
		o.spec.Stdin = os.Stdin
	default:
		f, err := os.Open(o.stdin)
		if err != nil {
			return fmt.Errorf("--stdin: %w", err)
		}
		defer f.Close()
		o.spec.Stdin = f
	}
	if !o.json {
		o.spec.Stdout, o.spec.Stderr = stdout, stderr
	}

	// SIGINT and SIGTERM cancel the run: the whole tree is killed before we exit.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var got syscall.Signal
	go func() {
		if s, ok := <-sigs; ok {
			got = s.(syscall.Signal)
			cancel()
		}
	}()

	res, err := runner.Run(ctx, o.spec)
	flushOutput() // the command's streams have ended; what follows is agentbox's
	if res == nil {
		return err // invalid spec: cobra prints it, exit 125
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if e := enc.Encode(res); e != nil {
			return e
		}
	} else if res.Error != "" {
		fmt.Fprintf(stderr, "agentbox: %s\n", res.Error)
	} else if res.Limit == runner.LimitRootSize {
		fmt.Fprintf(stderr, "agentbox: run ended by the root_size limit: the command filled the image root's private layer (--root-size %s)\n",
			humanSize(cmp.Or(o.spec.Sandbox.RootSize, sandbox.DefaultRootSize)))
	} else if res.Limit != runner.LimitNone {
		fmt.Fprintf(stderr, "agentbox: run ended by the %s limit\n", res.Limit)
	}
	status := res.ExitStatus()
	if res.Cancelled && got != 0 {
		status = 128 + int(got)
	}
	return exitError{status}
}
