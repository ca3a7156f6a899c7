// Run against a real daemon by cmd/agentbox's TestTypeScriptClient, which sets
// AGENTBOX_SOCKET, AGENTBOX_TOKEN and AGENTBOX_WORKSPACE (a directory the token's
// tenant may use, holding hello.txt).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Agentbox, AgentboxError, sseFrames } from "../dist/index.js";

const { AGENTBOX_SOCKET: socket, AGENTBOX_TOKEN: token, AGENTBOX_WORKSPACE: workspace } = process.env;
const ab = new Agentbox({ socket, token });
let id;

before(async () => {
  assert.ok(socket && token && workspace, "AGENTBOX_SOCKET, AGENTBOX_TOKEN and AGENTBOX_WORKSPACE must be set");
  const env = await ab.createEnvironment({ workspace, labels: { client: "typescript" } });
  assert.equal(env.state, "running");
  id = env.id;
});

after(async () => {
  if (id) await ab.destroyEnvironment(id);
});

const text = (events, kind) => Buffer.concat(events.filter((e) => e.kind === kind).map((e) => e.data)).toString();

async function collect(iter) {
  const out = [];
  for await (const ev of iter) out.push(ev);
  return out;
}

test("exec returns the result contract; a failing command is a result", async () => {
  const ok = await ab.exec(id, { argv: ["sh", "-c", "cat hello.txt; echo err >&2"] });
  assert.equal(ok.exit_code, 0);
  assert.equal(ok.stdout, "hello\n");
  assert.equal(ok.stderr, "err\n");
  assert.equal(ok.isolation, "namespace");
  const failed = await ab.exec(id, { argv: ["sh", "-c", "exit 3"] });
  assert.equal(failed.exit_code, 3);
  const timedOut = await ab.exec(id, { argv: ["sleep", "30"], timeout_seconds: 0.2 });
  assert.equal(timedOut.timed_out, true);
  assert.equal(timedOut.limit, "timeout");
});

test("errors are AgentboxErrors with the envelope's code and the status", async () => {
  await assert.rejects(ab.getEnvironment("env-does-not-exist"), (e) => {
    assert.ok(e instanceof AgentboxError);
    assert.equal(e.status, 404);
    assert.equal(e.code, "ENOENT");
    return true;
  });
  await assert.rejects(ab.exec(id, { argv: [] }), (e) => e instanceof AgentboxError && e.status === 400 && e.code === "EINVAL");
  const stranger = new Agentbox({ socket, token: "not-a-token-0123456789" });
  await assert.rejects(stranger.getEnvironment(id), (e) => e instanceof AgentboxError && e.status === 401 && e.code === "EAUTH");
  assert.throws(() => new Agentbox({ token }), TypeError);
});

test("background commands stream numbered events; a stream resumes after a sequence number", async () => {
  const proc = await ab.start(id, { argv: ["sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.05; done; echo oops >&2; exit 7"] });
  const all = await collect(ab.events(id, proc));
  assert.deepEqual(all.map((e) => e.seq), all.map((_, i) => i + 1));
  assert.equal(text(all, "stdout"), "line 1\nline 2\nline 3\n");
  assert.equal(text(all, "stderr"), "oops\n");
  const last = all.at(-1);
  assert.equal(last.kind, "exit");
  assert.equal(last.result.exit_code, 7);
  const rest = await collect(ab.events(id, proc, { after: 2 }));
  assert.equal(rest[0].seq, 3);
  assert.equal(rest.length, all.length - 2);
  assert.equal((await ab.wait(id, proc)).exit_code, 7);
});

test("stdin and signals reach a background command", async () => {
  const cat = await ab.start(id, { argv: ["cat"] });
  await ab.writeStdin(id, cat, "first ");
  await ab.writeStdin(id, cat, new TextEncoder().encode("second"), true);
  assert.equal((await ab.wait(id, cat)).stdout, "first second");
  const sleeper = await ab.start(id, { argv: ["sleep", "60"] });
  await ab.signal(id, sleeper, "TERM");
  const res = await ab.wait(id, sleeper);
  assert.equal(res.signal, "SIGTERM");
  assert.equal(res.exit_code, 143);
});

test("files and the diff", async () => {
  await ab.writeFile(id, "new.txt", "written by node\n");
  assert.equal(Buffer.from(await ab.readFile(id, "new.txt")).toString(), "written by node\n");
  const diff = await ab.diff(id);
  assert.match(diff, /\+written by node/);
  await assert.rejects(ab.readFile(id, "../outside"), (e) => e instanceof AgentboxError && e.status >= 400 && e.status < 500);
});

test("a command on a terminal: typed input, one output stream, resize", async () => {
  const sh = await ab.start(id, { argv: ["sh"], tty: true, rows: 12, cols: 50 });
  await ab.writeStdin(id, sh, "stty size; tty\n");
  const seen = [];
  for await (const ev of ab.events(id, sh)) {
    seen.push(ev);
    if (text(seen, "stdout").includes("/dev/pts/")) break;
  }
  assert.match(text(seen, "stdout"), /12 50\r\n/);
  await ab.resize(id, sh, 40, 132);
  await ab.writeStdin(id, sh, "stty size; exit 5\n");
  const res = await ab.wait(id, sh);
  assert.equal(res.exit_code, 5);
  assert.match(res.stdout, /40 132\r\n/);
  assert.equal(res.stderr, "");
  await assert.rejects(ab.resize(id, sh, 0, 10), (e) => e instanceof AgentboxError && e.code === "EINVAL");
});

test("sseFrames splits frames across chunks and ignores comments", async () => {
  const chunks = [": ping\n\nid: 1\nevent: stdout\nda", "ta: {\"seq\":1}\n\n", "event: exit\r\ndata: {\"seq\":2}\r\n\r\n"];
  const body = new ReadableStream({
    start(c) {
      for (const s of chunks) c.enqueue(new TextEncoder().encode(s));
      c.close();
    },
  });
  const frames = [];
  for await (const f of sseFrames(body)) frames.push(f);
  assert.deepEqual(frames, [
    { event: "stdout", data: '{"seq":1}' },
    { event: "exit", data: '{"seq":2}' },
  ]);
});
