#!/usr/bin/env python3
"""A deterministic scripted agent for ``agentbox eval --agent-cmd``.

It works as a real agent would, only without a model: it reads the task from
$AGENTBOX_AGENT_FILE, runs the public tests in its environment (streaming their
output), reads the code, edits it through the API, runs the tests again and
exits 0 when they pass. It knows one task, the built-in calc (add subtracts);
on any other it looks around and gives up with exit status 2.

    agentbox eval --tasks calc --agent-cmd 'python3 clients/python/examples/agent.py'

Its stdout and stderr end up in the attempt's directory (agent.stdout,
agent.stderr); what it changed in the environment is graded, not its claim.
"""

import os
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the checkout it runs from
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import agentbox  # noqa: E402


def run_tests(c, ctx):
    """Run the public tests in the background, echo their output, return the Result."""
    proc = c.start(ctx.env_id, ctx.test_command, env=ctx.env, timeout_seconds=120)
    stream = c.events(ctx.env_id, proc)
    for ev in stream:
        if ev.kind in ("stdout", "stderr"):
            sys.stdout.write(ev.data.decode("utf-8", "replace"))
    return stream.result


def fix_calc(c, ctx):
    src = c.read_file(ctx.env_id, "calc.py").decode()
    body = src.split("def add(", 1)[1].split("\ndef ", 1)[0]
    if "return a - b" not in body:
        print("calc.add does not subtract: nothing I know how to fix", file=sys.stderr)
        return False
    print("calc.add returns a - b: replacing it with a + b")
    c.str_replace(ctx.env_id, "calc.py", '"""Return the sum of a and b."""\n    return a - b',
                  '"""Return the sum of a and b."""\n    return a + b')
    return True


def main():
    ctx = agentbox.AgentContext()
    c = ctx.client()
    print("task %s (attempt %d): %s" % (ctx.task, ctx.attempt, ctx.title))
    names = sorted(e.name for e in c.list_dir(ctx.env_id, "."))
    print("workspace:", " ".join(names))
    before = run_tests(c, ctx)
    print("public tests before: exit %d" % before.exit_code)
    if ctx.task != "calc" or "calc.py" not in names:
        print("no script for task %s" % ctx.task, file=sys.stderr)
        return 2
    if not fix_calc(c, ctx):
        return 2
    after = run_tests(c, ctx)
    print("public tests after: exit %d" % after.exit_code)
    print(c.diff(ctx.env_id))
    return 0 if after.ok else 1


if __name__ == "__main__":
    sys.exit(main())
