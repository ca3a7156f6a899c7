package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/sandbox"
)

func doctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Print which isolation mechanisms this host supports",
		Long: `Doctor tries every mechanism namespace isolation uses (namespaces, overlayfs in a
user namespace, Landlock, seccomp, cgroups) and prints what it found. It exits 0 when
namespace isolation can run here, and 1 when a required mechanism is missing; agentbox
run then refuses to start at that level unless --isolation process is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := sandbox.Probe()
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(doctorJSON(r)); err != nil {
					return err
				}
			} else {
				w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "MECHANISM\tREQUIRED\tSTATUS\tDETAIL")
				for _, c := range r.Checks {
					status := "ok"
					if !c.OK {
						status = "MISSING"
					}
					req := "no"
					if c.Required {
						req = "yes"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Name, req, status, c.Detail)
				}
				w.Flush()
			}
			if err := r.Err(); err != nil {
				if !asJSON {
					fmt.Fprintf(stderr, "agentbox: namespace isolation cannot run here: %v\n", err)
				}
				return exitError{1}
			}
			if !asJSON {
				fmt.Fprintln(stdout, "namespace isolation: available")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// doctorReport is doctor --json: the probe's report in the snake_case keys of
// every other agentbox JSON.
type doctorReport struct {
	Checks        []doctorCheck `json:"checks"`
	LandlockABI   int           `json:"landlock_abi"`
	CgroupVersion int           `json:"cgroup_version"`
	Runsc         string        `json:"runsc"`
	Missing       []string      `json:"missing"`
}

type doctorCheck struct {
	Name     string `json:"name"`
	Required bool   `json:"required"`
	OK       bool   `json:"ok"`
	Detail   string `json:"detail"`
}

func doctorJSON(r sandbox.Report) doctorReport {
	d := doctorReport{Checks: []doctorCheck{}, LandlockABI: r.LandlockABI, CgroupVersion: r.CgroupVersion, Runsc: r.Runsc,
		Missing: append([]string{}, r.Missing()...)}
	for _, c := range r.Checks {
		d.Checks = append(d.Checks, doctorCheck{Name: c.Name, Required: c.Required, OK: c.OK, Detail: c.Detail})
	}
	return d
}
