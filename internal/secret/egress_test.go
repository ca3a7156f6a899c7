package secret_test

import (
	"testing"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/secret"
)

// TestEgressPlaceholders: the placeholders package egress hands a sandbox in
// place of a secret are recognised, so a result that shows the environment's
// secrets taints the session even though it holds no real one.
func TestEgressPlaceholders(t *testing.T) {
	ph, err := egress.NewPlaceholder("GITHUB_TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	fs := secret.Scan("GITHUB_TOKEN=" + ph + "\nHOME=/home/u\n")
	if len(fs) != 1 || fs[0].Rule != "egress-placeholder" || fs[0].Class != secret.Credential {
		t.Fatalf("Scan of a placeholder: %+v", fs)
	}
}
