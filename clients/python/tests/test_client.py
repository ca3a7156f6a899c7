"""Tests of the Python client against a real daemon.

cmd/agentbox's TestPythonClient starts `agentbox serve` with its own socket and
state directory and runs these with AGENTBOX_SOCKET, AGENTBOX_TOKEN (tenant a),
AGENTBOX_TEST_TOKEN_B (tenant b) and AGENTBOX_TEST_WORKSPACE (a directory holding
hello.txt under tenant a's workspace root). Without them every test fails: they
are never silently skipped.
"""

import io
import os
import socket
import sys
import tarfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import agentbox  # noqa: E402


def need(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError("%s is not set: run these tests through go test ./cmd/agentbox -run TestPythonClient" % name)
    return v


class CuttingProxy:
    """A TCP proxy to the daemon's Unix socket that cuts its n-th connection after
    n * `budget` bytes towards the client, mid-event: the stream must resume. (The
    budget grows so that an event larger than it is still delivered in the end.)"""

    def __init__(self, socket_path, budget):
        self.socket_path, self.budget, self.connections = socket_path, budget, 0
        self.ln = socket.socket()
        self.ln.bind(("127.0.0.1", 0))
        self.ln.listen(16)
        self.url = "http://127.0.0.1:%d" % self.ln.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ln.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(c, self.connections * self.budget), daemon=True).start()

    def _serve(self, c, budget):
        up = socket.socket(socket.AF_UNIX)
        up.connect(self.socket_path)

        def pump_up():
            try:
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    up.sendall(b)
            except OSError:
                pass

        threading.Thread(target=pump_up, daemon=True).start()
        left = budget
        try:
            while left > 0:
                b = up.recv(min(left, 65536))
                if not b:
                    break
                c.sendall(b)
                left -= len(b)
        except OSError:
            pass
        for s in (c, up):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.ln.close()


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.socket = need("AGENTBOX_SOCKET")
        cls.workspace = need("AGENTBOX_TEST_WORKSPACE")
        cls.c = agentbox.Client(socket=cls.socket, token=need("AGENTBOX_TOKEN"))

    def setUp(self):
        self.env = self.c.create(workspace=self.workspace, labels={"suite": "python"}, ttl_seconds=600)
        self.addCleanup(self.c.destroy, self.env.id)

    def test_pause_to_disk(self):
        e = self.c.create(workspace=self.workspace, layer="disk", ttl_seconds=600)
        self.addCleanup(self.c.destroy, e.id)
        self.assertEqual(e.layer, "disk")
        self.c.write_file(e.id, "kept.txt", b"on disk\n")
        p = self.c.pause(e.id, to_disk=True)
        self.assertEqual((p.state, p.paused_to_disk), ("paused", True))
        self.assertEqual(self.c.resume(e.id).paused_to_disk, False)
        self.assertEqual(self.c.exec(e.id, ["cat", "kept.txt"]).stdout, "on disk\n")

    def test_health(self):
        self.assertEqual(self.c.health(), {"status": "ok"})

    def test_environment_lifecycle(self):
        got = self.c.get(self.env.id)
        self.assertEqual(got.id, self.env.id)
        self.assertEqual(got.state, "running")
        self.assertEqual(got.labels, {"suite": "python"})
        self.assertIn(self.env.id, [e.id for e in self.c.list(labels={"suite": "python"})])
        self.assertNotIn(self.env.id, [e.id for e in self.c.list(labels={"suite": "other"})])
        self.assertEqual(self.c.pause(self.env.id).state, "paused")
        with self.assertRaises(agentbox.Paused):
            self.c.exec(self.env.id, ["true"])
        self.assertEqual(self.c.resume(self.env.id).state, "running")
        self.assertEqual(self.c.exec(self.env.id, ["echo", "on"]).stdout, "on\n")
        self.assertEqual(self.env.layer, "memory")
        with self.assertRaises(agentbox.InvalidRequest):
            self.c.pause(self.env.id, to_disk=True)
        self.c.write_file(self.env.id, "mine.txt", b"source\n")
        forks = self.c.fork(self.env.id, 2)
        self.assertEqual(len(forks), 2)
        for f in forks:
            self.addCleanup(self.c.destroy, f.id)
            self.assertEqual(f.snapshot, self.c.get(self.env.id).snapshot)
            self.assertEqual(self.c.exec(f.id, ["cat", "mine.txt"]).stdout, "source\n")
        self.assertEqual(self.c.snapshot(self.env.id)["depth"], 2)
        e2 = self.c.create(workspace=self.workspace)
        self.c.destroy(e2.id)
        with self.assertRaises(agentbox.NotFound):
            self.c.exec(e2.id, ["true"])

    def test_exec(self):
        r = self.c.exec(self.env.id, ["cat", "hello.txt"])
        self.assertEqual((r.exit_code, r.stdout), (0, "hello\n"))
        self.assertTrue(r.ok)
        r = self.c.exec(self.env.id, ["sh", "-c", "echo out; echo err >&2; exit 7"])
        self.assertEqual((r.exit_code, r.stdout, r.stderr, r.ok), (7, "out\n", "err\n", False))
        r = self.c.exec(self.env.id, ["sleep", "10"], timeout_seconds=0.3)
        self.assertTrue(r.timed_out)
        r = self.c.exec(self.env.id, ["sh", "-c", "echo $GREETING; cat"], env=["GREETING=hi"], stdin="in\n")
        self.assertEqual(r.stdout, "hi\nin\n")
        with self.assertRaises(TypeError):
            self.c.exec(self.env.id, "echo no shell")

    def test_run(self):
        before = {e.id for e in self.c.list()}
        r = self.c.run(["sh", "-c", "cat hello.txt; echo x > hello.txt; exit 3"], environment={"workspace": self.workspace})
        self.assertEqual((r.exit_code, r.stdout), (3, "hello\n"))
        r = self.c.run(["cat", "hello.txt"], environment={"workspace": self.workspace})
        self.assertEqual(r.stdout, "hello\n")  # a fresh environment: the first one's write is gone
        self.assertEqual({e.id for e in self.c.list()}, before)  # and both were destroyed

    def test_background_events(self):
        proc = self.c.start(self.env.id, ["sh", "-c", "for i in $(seq 1 50); do echo line $i; done; exit 3"])
        stream = self.c.events(self.env.id, proc)
        out = b"".join(ev.data for ev in stream if ev.kind == "stdout")
        self.assertEqual(out.decode(), "".join("line %d\n" % i for i in range(1, 51)))
        self.assertEqual(stream.result.exit_code, 3)
        self.assertEqual(self.c.wait(self.env.id, proc).exit_code, 3)

    def test_events_resume_after_dropped_connection(self):
        # Regression guard: a stream cut mid-event is resumed with Last-Event-ID,
        # losing and repeating nothing.
        proxy = CuttingProxy(self.socket, 600)
        self.addCleanup(proxy.close)
        c = agentbox.Client(url=proxy.url, token=need("AGENTBOX_TOKEN"))
        proc = self.c.start(self.env.id, ["sh", "-c", "for i in $(seq 1 300); do echo line $i; done"])
        self.assertEqual(self.c.wait(self.env.id, proc).exit_code, 0)  # all output is in the replay buffer
        stream = c.events(self.env.id, proc)
        seqs, out = [], b""
        for ev in stream:
            seqs.append(ev.seq)
            if ev.kind == "stdout":
                out += ev.data
        self.assertEqual(out.decode(), "".join("line %d\n" % i for i in range(1, 301)))
        self.assertEqual(seqs, sorted(set(seqs)), "events repeated or out of order")
        self.assertEqual(stream.result.exit_code, 0)
        self.assertGreater(proxy.connections, 3, "the proxy never cut the stream: the test proves nothing")

    def test_events_error_ends_stream(self):
        proc = self.c.start(self.env.id, ["sleep", "30"])
        e2 = self.c.create(workspace=self.workspace)
        with self.assertRaises(agentbox.NotFound):
            list(self.c.events(e2.id, proc))
        self.c.destroy(e2.id)
        self.c.signal(self.env.id, proc, "KILL")
        self.assertEqual(self.c.wait(self.env.id, proc).signal, "SIGKILL")

    def test_stdin(self):
        proc = self.c.start(self.env.id, ["cat"])
        self.c.write_stdin(self.env.id, proc, "fed\n", eof=True)
        r = self.c.wait(self.env.id, proc)
        self.assertEqual(r.stdout, "fed\n")

    def test_files(self):
        e = self.env.id
        self.c.write_file(e, "dir/a.txt", "alpha\n")
        self.assertEqual(self.c.read_file(e, "dir/a.txt"), b"alpha\n")
        self.assertEqual(self.c.read_file(e, "dir/a.txt", offset=1, length=3), b"lph")
        self.c.mkdir(e, "empty")
        names = {x.name: x.type for x in self.c.list_dir(e, ".")}
        self.assertEqual(names.get("dir"), "dir")
        self.assertEqual(names.get("empty"), "dir")
        self.assertEqual(names.get("hello.txt"), "file")
        st = self.c.stat(e, "dir/a.txt")
        self.assertEqual((st.type, st.size), ("file", 6))
        self.c.remove(e, "dir/a.txt")
        with self.assertRaises(agentbox.NotFound) as cm:
            self.c.read_file(e, "dir/a.txt")
        self.assertEqual(cm.exception.status, 404)
        self.assertTrue(cm.exception.suggested_action)
        with self.assertRaises(agentbox.PermissionDenied) as cm:
            self.c.read_file(e, "../../etc/passwd")
        self.assertNotIn(self.workspace, str(cm.exception))

    def test_tar_round_trip(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            data = b"from tar\n"
            info = tarfile.TarInfo("up/t.txt")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        self.c.upload(self.env.id, ".", buf.getvalue())
        self.assertEqual(self.c.read_file(self.env.id, "up/t.txt"), b"from tar\n")
        with tarfile.open(fileobj=io.BytesIO(self.c.download(self.env.id, "up"))) as tf:
            names = tf.getnames()
            member = [m for m in tf.getmembers() if m.name.endswith("t.txt")][0]
            self.assertEqual(tf.extractfile(member).read(), b"from tar\n", names)

    def test_patch_str_replace_diff(self):
        e = self.env.id
        rep = self.c.apply_patch(e, "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n")
        self.assertEqual([(f["op"], f["path"]) for f in rep.files], [("modify", "hello.txt")])
        with self.assertRaises(agentbox.Conflict):
            self.c.apply_patch(e, "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-nope\n+x\n")
        self.c.str_replace(e, "hello.txt", "world", "there")
        with self.assertRaises(agentbox.Conflict):
            self.c.str_replace(e, "hello.txt", "absent", "x")
        self.assertEqual(self.c.read_file(e, "hello.txt"), b"hello, there\n")
        d = self.c.diff(e)
        self.assertIn("-hello\n+hello, there\n", d)

    def test_artifacts(self):
        self.c.write_file(self.env.id, "report.txt", "artifact body\n")
        a = self.c.export(self.env.id, "report.txt")
        self.assertTrue(a.ref.startswith("sha256:"))
        self.assertEqual(a.size, 14)
        data, meta = self.c.read_artifact(a.ref)
        self.assertEqual(data, b"artifact body\n")
        self.assertEqual(meta.ref, a.ref)
        self.assertEqual(self.c.read_artifact(a.ref, offset=9, length=4)[0], b"body")

    def test_typed_errors(self):
        with self.assertRaises(agentbox.AuthError) as cm:
            agentbox.Client(socket=self.socket, token="not-a-token-0123456789").list()
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.retryable), (401, "EAUTH", False))
        other = agentbox.Client(socket=self.socket, token=need("AGENTBOX_TEST_TOKEN_B"))
        with self.assertRaises(agentbox.NotFound):
            other.exec(self.env.id, ["true"])  # another tenant's environment does not exist for b
        with self.assertRaises(agentbox.InvalidRequest):
            self.c._json("POST", self.c._env(self.env.id) + "/exec", {"argv": ["true"], "tiemout": 1})
        with self.assertRaises(agentbox.PermissionDenied):
            self.c.create(workspace="/etc")
        self.assertIsInstance(agentbox.from_envelope(429, b'{"error":{"code":"ERATE","retryable":true}}'),
                              agentbox.RateLimited)

    def test_no_daemon(self):
        with self.assertRaises(agentbox.ConnectionFailed):
            agentbox.Client(socket="/nonexistent/agentbox.sock", token="x").health()


if __name__ == "__main__":
    unittest.main()
