package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/config"
)

func configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Write the daemon's configuration file",
		Args:  cobra.NoArgs,
	}
	var force bool
	initCmd := &cobra.Command{
		Use:   "init [PATH]",
		Short: "Write a commented example configuration for agentbox serve",
		Long: `Init writes a commented configuration for agentbox serve --config to PATH (default:
$AGENTBOX_CONFIG, else ~/.config/agentbox/config.yaml): one tenant, "local", that
may start environments from your home directory (workspace_roots) and mount nothing
(mount_roots), with every other key shown at its default. Its token is read from
agentbox.token beside it, which init creates (mode 0600) unless it exists. It
refuses to replace an existing configuration unless --force is given.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := ""
			if len(args) == 1 {
				path = args[0]
			}
			return configInit(path, force)
		},
	}
	initCmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	cmd.AddCommand(initCmd)
	return cmd
}

func configInit(path string, force bool) error {
	if path == "" {
		var err error
		if path, err = config.ConfigFile(); err != nil {
			return err
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return fmt.Errorf("no home directory to allow (%w): write workspace_roots yourself", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: edit it, or pass --force to replace it", path)
	}
	if err != nil {
		return err
	}
	_, werr := f.WriteString(config.Example(home))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	tok := filepath.Join(filepath.Dir(path), "agentbox.token")
	if _, err := os.Lstat(tok); errors.Is(err, fs.ErrNotExist) {
		if _, err := config.NewLocalToken(tok); err != nil {
			return err
		}
	}
	if _, err := config.Load(path); err != nil {
		return fmt.Errorf("the example does not load (a bug): %w", err)
	}
	fmt.Fprintf(stderr, "wrote %s (token: %s)\nstart the daemon: agentbox serve --config %s\nclients: export AGENTBOX_TOKEN=$(cat %s)\n", path, tok, path, tok)
	return nil
}
