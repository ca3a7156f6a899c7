"""What ``agentbox eval --agent-cmd`` tells an external agent about its attempt."""

import json
import os

from .client import Client


class AgentContext:
    """The attempt an external agent works on, read from $AGENTBOX_AGENT_FILE.

    task, title, attempt, statement: the task; env_id: its one environment;
    workspace: where the code is inside it; test_command: the public tests (argv,
    run from the workspace); env: the variables commands run with;
    timeout_seconds: the wall budget (the agent is killed after it);
    url, mcp_url, token: the connection. client() connects to the environment.
    """

    def __init__(self, path=None):
        path = path or os.environ.get("AGENTBOX_AGENT_FILE")
        if not path:
            raise RuntimeError("AGENTBOX_AGENT_FILE is not set: run this agent with agentbox eval --agent-cmd")
        with open(path) as f:
            d = json.load(f)
        self.raw = d
        self.task, self.title, self.attempt = d["task"], d.get("title", ""), d.get("attempt", 1)
        self.statement = d["statement"]
        self.url, self.mcp_url, self.token = d["url"], d.get("mcp_url", ""), d["token"]
        self.env_id = d["environment_id"]
        self.workspace = d.get("workspace", "/workspace")
        self.test_command = d.get("test_command") or []
        self.env = d.get("env") or []
        self.timeout_seconds = d.get("timeout_seconds", 0)

    def client(self):
        return Client(url=self.url, token=self.token)
