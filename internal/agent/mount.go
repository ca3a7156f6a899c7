package agent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/internal/pin"
	"github.com/agentbox/agentbox/internal/tool"
)

// MCPTool is one tool an external MCP server lists, with the handler that
// forwards a call to it (tools/call).
type MCPTool struct {
	Server string
	Def    tool.Def
	Call   tool.Handler
}

// Pin returns the definition pins are made of and checked against.
func (t MCPTool) Pin() (pin.Tool, error) {
	p := pin.Tool{Server: t.Server, Name: t.Def.Name, Description: t.Def.Description,
		InputSchema: t.Def.InputSchema, OutputSchema: t.Def.OutputSchema}
	if t.Def.Annotations != nil {
		var err error
		if p.Annotations, err = json.Marshal(t.Def.Annotations); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Mount registers in r the tools whose definitions match their pins, as
// tool.FromMCP specs of scope with their server set (so the registry's gate
// judges their calls as the server's, hints untrusted). Every other tool is left
// out, and returned with its check to show a person: never granted, changed since
// it was granted (a rug pull, with the diff), offered by a second server or under
// a name already registered (shadowing), or holding instructions in its
// definition (poisoning, with the detector's flags). A person's grant
// (pin.Store.Grant) makes it usable at the next Mount.
func Mount(r *tool.Registry, pins *pin.Store, scope string, tools []MCPTool) (refused []pin.Check, err error) {
	defs := make([]pin.Tool, len(tools))
	for i, t := range tools {
		if defs[i], err = t.Pin(); err != nil {
			return nil, err
		}
	}
	for i, c := range pins.CheckAll(defs) {
		t := tools[i]
		if _, taken := r.Spec(t.Def.Name); taken {
			c.Status, c.Other = pin.Shadowed, "registered"
			c.Why = fmt.Sprintf("server %s offers %s, a name this session already has", t.Server, t.Def.Name)
		}
		if !c.Usable() {
			refused = append(refused, c)
			continue
		}
		s := tool.FromMCP(t.Def, scope, t.Call)
		s.Server = t.Server
		if err := r.Register(s); err != nil {
			if errors.Is(err, tool.ErrRegister) {
				c.Status, c.Why = pin.Invalid, err.Error()
				refused = append(refused, c)
				continue
			}
			return refused, err
		}
	}
	return refused, nil
}
