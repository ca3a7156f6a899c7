package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/task"
)

type templateOptions struct {
	stateDir string
	json     bool
}

// store opens the image store under the state directory.
func (o *templateOptions) store() (*image.Store, error) {
	s, err := image.OpenStore(image.StoreDir(o.stateDir), image.Options{})
	if errors.Is(err, image.ErrNotRoot) {
		return nil, fmt.Errorf("%w: run agentbox template as root", err)
	}
	return s, err
}

func templateCmd() *cobra.Command {
	o := &templateOptions{}
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Build, list, inspect and remove templates: root file systems for sandboxes",
		Long: `A template is an image: a stack of read-only layers, each stored once under the
state directory (<state>/images) however many templates share it, that a sandbox
mounts as its root file system, with its own private writable layer on top.
The workspace stays separate: it is /workspace whatever the template.

A template comes from a bare source (template build --from) or a build spec
(template build -f spec.yaml): a base (an image, a Debian suite, or the host's
system directories), then apt, npm, go_modules, copy and run steps, each a layer
cached by its parent and its definition, so a second build of an unchanged spec
runs nothing and a changed step rebuilds only from there. templates/ in the
source tree has specs for Python, Go and Node.

The store needs root (its files belong to systemd's foreign uid range).`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.stateDir, "state-dir", config.DefaultStateDir(), "agentbox's state directory; templates live in its images/ store")
	pf.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	cmd.AddCommand(templateBuildCmd(o), templateLsCmd(o), templateInspectCmd(o), templateRmCmd(o), templateGCCmd(o))
	return cmd
}

type templateBuildOptions struct {
	name    string
	from    string
	file    string
	noCache bool
	build   buildFlags
}

func templateBuildCmd(o *templateOptions) *cobra.Command {
	b := &templateBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build --name NAME (--from SOURCE | -f SPEC.yaml) [--no-cache]",
		Short: "Make a template from a source or a build spec",
		Long: `Build makes the template NAME (lowercase letters, digits, '.', '_', '-', an optional
:tag), replacing what the name pointed at; the old image's layers stay until gc.

--from SOURCE imports a bare image:
  docker-archive:FILE   a docker save archive
  oci-archive:FILE      an OCI image layout in a tar archive
  oci:DIR[:REF]         an OCI image layout directory
  registry:REF          an image in an OCI registry (anonymous; HTTPS)
  debian:SUITE          a Debian suite bootstrapped with mmdebstrap

-f SPEC.yaml builds a spec; copy steps read files next to the spec. Each step
prints one line when it is done, saying whether it came from the cache.

A step that runs apt, npm or go_modules reaches only its registry (Debian's
archive, the npm registry, the Go module proxy) through the egress proxy,
which refuses private and reserved addresses and tunnels TLS end to end. Where
the registries are reached through a site's mirror or TLS interceptor, name
its addresses with --allow-private (they open to the registry's names only)
and its CA with --ca-file (trusted by the build's steps, not by the template
at run time). A spec with base: host trusts the host's bundle already.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return templateBuild(cmd.Context(), o, b) },
	}
	f := cmd.Flags()
	f.StringVar(&b.name, "name", "", "template name (required)")
	f.StringVar(&b.from, "from", "", "bare source: docker-archive:FILE, oci-archive:FILE, oci:DIR, registry:REF or debian:SUITE")
	f.StringVarP(&b.file, "file", "f", "", "build spec (YAML)")
	f.BoolVar(&b.noCache, "no-cache", false, "rebuild every step instead of taking cached layers")
	b.build.add(f)
	return cmd
}

func templateBuild(ctx context.Context, o *templateOptions, b *templateBuildOptions) error {
	if b.name == "" {
		return errors.New("give --name NAME, what the template will be called")
	}
	if err := image.CheckName(b.name); err != nil {
		return err
	}
	if (b.from == "") == (b.file == "") {
		return errors.New("give exactly one of --from SOURCE (docker-archive:FILE, oci-archive:FILE, oci:DIR, registry:REF, debian:SUITE) and -f SPEC.yaml")
	}
	var spec *image.Spec
	if b.file != "" {
		data, err := os.ReadFile(b.file)
		if err != nil {
			return fmt.Errorf("build spec: %w", err)
		}
		if spec, err = image.ParseSpec(data); err != nil {
			return fmt.Errorf("%s: %w", b.file, err)
		}
	} else if _, err := image.ParseSource(b.from); err != nil {
		return err
	}
	runner, err := b.build.runner()
	if err != nil {
		return err
	}
	s, err := o.store()
	if err != nil {
		return err
	}
	start := time.Now()
	progress := stderr
	if o.json {
		progress = io.Discard
	}
	var r *image.Record
	if spec != nil {
		fmt.Fprintf(progress, "building %s from %s: %s, then %d steps\n", b.name, b.file, describeBase(spec.Base), len(spec.Steps))
		runner.Output = progress // the steps' output is progress too
		r, err = s.Build(ctx, spec, image.BuildOptions{Name: b.name, Dir: filepath.Dir(b.file), Runner: runner,
			NoCache: b.noCache, Log: &elapsedWriter{w: progress, start: start}})
	} else {
		fmt.Fprintf(progress, "importing %s from %s\n", b.name, b.from)
		r, err = s.Import(ctx, b.from, image.ImportOptions{Name: b.name})
	}
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(r)
	}
	cached, steps := buildCacheHits(r)
	fmt.Fprintf(stdout, "%s = %s: %d layers", b.name, r.ID, len(r.Layers))
	if steps > 0 {
		fmt.Fprintf(stdout, ", %d of %d build steps cached", cached, steps)
	}
	fmt.Fprintf(stdout, ", %.1fs\n", time.Since(start).Seconds())
	return nil
}

// buildFlags are the build sandbox's flags: template build's, and grade's and
// eval's for the tasks whose environment: embeds a build spec.
type buildFlags struct {
	allowPrivate []string
	caFiles      []string
}

func (b *buildFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&b.allowPrivate, "allow-private", nil, "a private or reserved prefix (CIDR) the build steps' registries (and no other name) may resolve to, e.g. a site's mirror or TLS interceptor; repeatable")
	f.StringArrayVar(&b.caFiles, "ca-file", nil, "PEM certificates the build steps with a network trust besides the image's bundle, e.g. a site's TLS interceptor's CA (/usr/local/share/ca-certificates/...); for the build only, never written into the template; repeatable")
}

// taskEnvFlags are grade's and eval's flags for the tasks' environments: the
// state directory whose image store holds their templates, and the build
// sandbox of those whose environment: embeds a build spec.
type taskEnvFlags struct {
	stateDir string
	build    buildFlags
}

func (e *taskEnvFlags) add(f *pflag.FlagSet) {
	f.StringVar(&e.stateDir, "state-dir", config.DefaultStateDir(), "agentbox's state directory, whose images/ store holds the tasks' templates (and builds their environment: specs)")
	e.build.add(f)
}

// runner is the build sandbox with the flags' --allow-private and --ca-file.
func (b *buildFlags) runner() (*sandbox.BuildRunner, error) {
	var private []netip.Prefix
	for _, c := range b.allowPrivate {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("--allow-private %q: want a CIDR prefix such as 10.1.0.0/16", c)
		}
		private = append(private, p)
	}
	if err := (egress.Policy{AllowPrivate: private}).Validate(); err != nil {
		return nil, fmt.Errorf("--allow-private: %w", err)
	}
	return buildRunner(private, b.caFiles, "--ca-file")
}

// buildRunner is a build sandbox whose steps' registries may resolve to
// private and may be trusted with the certificates of caFiles (flag names
// them in errors).
func buildRunner(private []netip.Prefix, caFiles []string, flag string) (*sandbox.BuildRunner, error) {
	r := &sandbox.BuildRunner{AllowPrivate: private}
	for _, f := range caFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		pem, err := sandbox.ParseTrust(data)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, f, err)
		}
		r.Trust = append(r.Trust, pem...)
	}
	return r, nil
}

// describeBase says what a build starts from, and what a cold start costs.
func describeBase(b image.Base) string {
	switch {
	case b.Debian != nil:
		return "base debian:" + b.Debian.Suite + " (mmdebstrap from the archive unless cached: minutes)"
	case b.Host:
		return "base the host's system directories"
	}
	return "base " + b.Image
}

// buildCacheHits counts a build's steps (its Debian base included) and those
// the cache had.
func buildCacheHits(r *image.Record) (cached, steps int) {
	if r.Build == nil {
		return 0, 0
	}
	if r.Build.Spec != nil && r.Build.Spec.Base.Debian != nil {
		steps++
		if r.Build.BaseCached {
			cached++
		}
	}
	for _, st := range r.Build.Steps {
		steps++
		if st.Cached {
			cached++
		}
	}
	return cached, steps
}

// elapsedWriter prefixes each line a build logs with the time since it started.
type elapsedWriter struct {
	w     io.Writer
	start time.Time
}

func (e *elapsedWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimSuffix(string(p), "\n"), "\n") {
		fmt.Fprintf(e.w, "[%6.1fs] %s\n", time.Since(e.start).Seconds(), line)
	}
	return len(p), nil
}

func templateLsCmd(o *templateOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the templates",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			s, err := o.store()
			if err != nil {
				return err
			}
			list, err := s.List()
			if err != nil {
				return err
			}
			if o.json {
				if list == nil {
					list = []image.Summary{}
				}
				return writeJSON(list)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tLAYERS\tSIZE\tSOURCE\tCREATED")
			for _, t := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", t.Name, shortID(t.ID.String()), t.Layers,
					humanSize(t.Bytes), t.Source, t.Created.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
}

func templateInspectCmd(o *templateOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect NAME",
		Short: "Show a template's layers, sizes, digests, config and build record",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			s, err := o.store()
			if err != nil {
				return err
			}
			info, err := s.Inspect(args[0])
			if err != nil {
				return err
			}
			if o.json {
				return writeJSON(info)
			}
			printTemplate(stdout, info)
			return nil
		},
	}
}

// printTemplate writes what inspect shows, for a person.
func printTemplate(w io.Writer, info *image.Info) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", info.ID)
	fmt.Fprintf(tw, "names:\t%s\n", strings.Join(info.Names, ", "))
	fmt.Fprintf(tw, "source:\t%s\n", info.Source)
	fmt.Fprintf(tw, "created:\t%s\n", info.Created.Format(time.RFC3339))
	if info.Host {
		fmt.Fprintf(tw, "base:\tthe host's system directories\n")
	}
	fmt.Fprintf(tw, "env:\t%s\n", strings.Join(info.Config.Env, " "))
	if info.Config.WorkingDir != "" {
		fmt.Fprintf(tw, "workdir:\t%s\n", info.Config.WorkingDir)
	}
	tw.Flush()
	var total int64
	fmt.Fprintln(w, "\nLAYER (bottom first)")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIFF_ID\tSIZE\tENTRIES\tADJUSTED")
	for _, l := range info.Layers {
		total += l.Bytes
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", l.DiffID, humanSize(l.Bytes), l.Entries, l.Adjusted)
	}
	tw.Flush()
	fmt.Fprintf(w, "total %s in %d layers\n", humanSize(total), len(info.Layers))
	if b := info.Build; b != nil {
		fmt.Fprintf(w, "\nBUILD\nbase: %s", b.Base)
		if b.BaseCached {
			fmt.Fprint(w, " (cached)")
		}
		fmt.Fprintln(w)
		for i, st := range b.Steps {
			fmt.Fprintf(w, "step %d: %s\n  key %s\n  layer %s\n", i+1, st.Step, st.Key, st.Layer)
			if st.Inputs != "" {
				fmt.Fprintf(w, "  inputs %s\n", st.Inputs)
			}
		}
	}
	if len(info.Packages) > 0 {
		fmt.Fprintf(w, "\nPACKAGES (%d, Debian)\n", len(info.Packages))
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, p := range info.Packages {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, p.Version, p.Arch)
		}
		tw.Flush()
	}
}

func templateRmCmd(o *templateOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove template names (their layers go at the next gc)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			s, err := o.store()
			if err != nil {
				return err
			}
			var errs []error
			for _, n := range args {
				if err := s.Remove(n); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(stdout, "removed %s\n", n)
			}
			return errors.Join(errs...)
		},
	}
}

func templateGCCmd(o *templateOptions) *cobra.Command {
	var cache bool
	cmd := &cobra.Command{
		Use:   "gc [--cache]",
		Short: "Remove the images and layers no template, running sandbox or build cache entry uses",
		Long: `GC removes every image no name points at and no sandbox holds open, and every layer
none of the rest uses. Layers the build cache records are kept (a rebuild then
finds them) unless --cache is given, which drops the cache too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := o.store()
			if err != nil {
				return err
			}
			res, err := s.GC(cmd.Context(), image.GCOptions{Cache: cache})
			if err != nil {
				return err
			}
			if o.json {
				return writeJSON(res)
			}
			fmt.Fprintf(stdout, "removed %d images, %d layers (%s), %d cache entries\n",
				res.Images, res.Layers, humanSize(res.Bytes), res.CacheEntries)
			return nil
		},
	}
	cmd.Flags().BoolVar(&cache, "cache", false, "also drop the build cache and the layers only it kept")
	return cmd
}

func writeJSON(v any) error {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// humanSize is n bytes to one decimal of the largest binary unit ("253.8M").
func humanSize(n int64) string {
	f, units := float64(n), "KMGT"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	u := -1
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	return fmt.Sprintf("%.1f%c", f, units[u])
}

// shortID is an image id's first 12 hex digits, as docker shows them.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// openImages opens the daemon's image store, or returns nil where it cannot
// have one (not root: then there are no templates).
func openImages(stateDir string) (*image.Store, error) {
	s, err := image.OpenStore(image.StoreDir(stateDir), image.Options{})
	if errors.Is(err, image.ErrNotRoot) || errors.Is(err, image.ErrUnsupported) {
		return nil, nil
	}
	return s, err
}

// ensureEnvironments builds the templates the tasks' environment fields embed
// into stateDir's store with runner (once per spec; a rebuild is fully cached)
// and checks that the named ones exist, before any agent or grader runs on them.
func ensureEnvironments(ctx context.Context, stateDir string, runner *sandbox.BuildRunner, tasks []*task.Task, say func(string)) error {
	var store *image.Store
	done := map[string]bool{}
	for _, t := range tasks {
		name := t.Environment.TemplateName()
		if name == "" || done[name] {
			continue
		}
		if store == nil {
			var err error
			if store, err = openImages(stateDir); err != nil {
				return err
			}
			if store == nil {
				return fmt.Errorf("task %s: environment %s: templates need root (the image store's files belong to systemd's foreign uid range)", t.ID, name)
			}
		}
		start := time.Now()
		if _, err := t.Environment.Ensure(ctx, store, runner, nil); err != nil {
			return fmt.Errorf("task %s: %w", t.ID, err)
		}
		if t.Environment.Spec != nil {
			say(fmt.Sprintf("template %s for task %s built in %.1fs", name, t.ID, time.Since(start).Seconds()))
		}
		done[name] = true
	}
	return nil
}
