package chain

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, 5*time.Second) }
