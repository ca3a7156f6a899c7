package trace

// The events of a compaction of the context a policy sees (agent.Limits.CompactAfter):
// ContextCompacting is the intent, ContextCompacted the summary. A driver that
// dies between them leaves the compaction incomplete: the next one discards it
// (the full history still stands in the journal) and compacts again.
const (
	ContextCompacting Type = "ContextCompacting" // Compaction without Summary
	ContextCompacted  Type = "ContextCompacted"  // Compaction
)

// Compaction summarizes the turns a policy was shown, up to and including the
// call Through (Turns of them).
type Compaction struct {
	Through string `json:"through"`
	Turns   int    `json:"turns"`
	Summary string `json:"summary,omitempty"`
}
