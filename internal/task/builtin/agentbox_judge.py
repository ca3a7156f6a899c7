"""agentbox's out-of-process judge: runs a task's hidden checks in a process that never
imports the code under test, and writes JUnit XML for the grader.

    python3 -I -S -B agentbox_judge.py SPEC.py

SPEC.py (hidden, next to this file) defines MODULE, the repository module under test,
and test_* functions taking `call`. call(name, *args) runs MODULE.name(*args) in a
separate worker process (Python; or, when SPEC.py defines WORKER, an argv run from
the repository root that speaks the same protocol, and BUILD, an optional argv run
once before it, e.g. compiling a Go worker: see the protocol below; "{tmp}" in
either stands for a private directory the judge makes and removes) and returns
Reply(value, args, raised, message, handle): the return value, the arguments as they
were after the call (to check that inputs were not mutated), the name and message of
the exception it raised, if any, and a Handle when the value stays in the worker.
Values cross as JSON, so int and float stay apart. A test passes when it returns,
fails on AssertionError, and errors otherwise (or when the worker dies or hangs).

The Python worker also keeps objects for the checks, named by Handle:
call(name, *args, keep=True) keeps the return value (a value that is not JSON is
always kept); call(name, *args, on=h) calls method name of h; call.attr(h, name)
reads an attribute; call.make(value) keeps a value built from JSON, call.recorder()
keeps a callable that records its arguments (attribute calls) and returns
{"call": N, "args": [...]}; call.get(h) returns a kept object as JSON and
call.same(h1, h2) whether two handles name one object. A Handle passed as an argument
(at any depth) stands for its object.

Inputs: `random` in SPEC.py is, for each test, a generator seeded with the grade's
seed and the test's name, so a grade is reproduced by its seed, and tests draw inputs
independently of each other's outcome. The seed is $AGENTBOX_SEED (the grader takes a
fresh one per grade and records it in the verdict), else a random one; it is printed
on standard error.

Worker protocol: the worker prints {"ready": true} on its standard output, then reads
one JSON object per line from its standard input and answers each with one line:
{"fn": NAME, "args": [...]} (and optionally "on": N, "keep": true) is answered with
{"value": V, "args": [...]} (the arguments after the call), {"handle": N, "args": ...}
or {"raised": TYPE, "message": TEXT, "args": [...]}; {"attr": NAME, "on": N},
{"make": "value", "value": V}, {"make": "recorder"}, {"get": N} and {"same": [N, M]}
likewise. A Go worker needs to answer only the calls its spec makes.

Contract with the grader: $AGENTBOX_RESULTS names the file to create for the JUnit
XML, $AGENTBOX_NONCE is echoed as the root's agentbox-nonce attribute, and the test
ids are "SPEC.py::test_name".

Why out of process: code under test that shares the process of the tests can read the
nonce and the results descriptor and forge the results; hardening that process is a
race the grader loses. Here the judge first makes itself non-dumpable (its /proc
files, memory and descriptors are closed to the worker, which runs as the same user),
reads its spec and deletes it and itself from the repository (the worker cannot read
the checks), and keeps the results descriptor, nonce and seed to itself (the worker
gets stdin, stdout and stderr only and none of the contract's variables; its stdout
is the protocol channel, moved away from fd 1 before the code under test is
imported). The worker can only answer calls; what counts as a right answer is
decided here, from inputs drawn at random where the spec says so. The exit status
agrees with the results, so a worker process that lingers and rewrites the results
file after the judge wrote it is caught by the grader.
"""

import ctypes
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import xml.sax.saxutils

_TIMEOUT = 10.0  # seconds per call
_MAX_LINE = 1 << 20

_WORKER = r"""
import json, os, sys
proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)                      # print() of the code under test goes to stderr
sys.path.append(os.getcwd())
try:
    mod = __import__(sys.argv[1])
except BaseException as e:
    proto.write(json.dumps({"import_error": "%s: %s" % (type(e).__name__, e)}) + "\n")
    proto.flush()
    raise SystemExit(3)
kept = []

class Recorder:
    def __init__(self):
        self.calls = []
    def __call__(self, *args):
        self.calls.append(list(args))
        return {"call": len(self.calls), "args": list(args)}

def keep(obj):
    for i, o in enumerate(kept):
        if o is obj:
            return i
    kept.append(obj)
    return len(kept) - 1

def decode(v):
    if isinstance(v, dict):
        if set(v) == {"$h"}:
            return kept[v["$h"]]
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v

def is_kept(v):
    return not isinstance(v, (bool, int, float, str, type(None))) and any(v is o for o in kept)

def encode_args(args):
    # A kept argument is named by its handle; everything else crosses as JSON.
    return [{"$h": keep(a)} if is_kept(a) else a for a in args]

def answer(value, args, kept_value=False):
    out = {"args": None if args is None else encode_args(args)}
    if not kept_value and not is_kept(value):
        try:
            json.dumps(value)
            out["value"] = value
            return out
        except (TypeError, ValueError):
            pass
    out["handle"] = keep(value)
    return out

def serve(req):
    if "fn" in req:
        args = decode(req.get("args", []))
        target = mod if req.get("on") is None else kept[req["on"]]
        try:
            value = getattr(target, req["fn"])(*args)
        except BaseException as e:
            return {"raised": type(e).__name__, "message": str(e)[:2000], "args": encode_args(args)}
        return answer(value, args, req.get("keep", False))
    if "attr" in req:
        return answer(getattr(kept[req["on"]], req["attr"]), None)
    if req.get("make") == "value":
        return {"handle": keep(decode(req["value"]))}
    if req.get("make") == "recorder":
        return {"handle": keep(Recorder())}
    if "get" in req:
        return {"value": kept[req["get"]]}
    if "same" in req:
        a, b = req["same"]
        return {"value": kept[a] is kept[b]}
    return {"raised": "BadRequest", "message": repr(req)[:200], "args": None}

proto.write(json.dumps({"ready": True}) + "\n")
proto.flush()
for line in sys.stdin:
    try:
        out = serve(json.loads(line))
        text = json.dumps(out)
    except BaseException as e:
        text = json.dumps({"raised": "WorkerError", "message": "%s: %s" % (type(e).__name__, str(e)[:2000]), "args": None})
    proto.write(text + "\n")
    proto.flush()
"""


class Handle:
    """An object kept in the worker."""

    def __init__(self, n):
        self.n = n

    def __repr__(self):
        return "<kept %d>" % self.n


class Reply:
    def __init__(self, value=None, args=None, raised=None, message="", handle=None):
        self.value, self.args, self.raised, self.message, self.handle = value, args, raised, message, handle

    def __repr__(self):
        if self.raised:
            return "raised %s(%r)" % (self.raised, self.message)
        if self.handle is not None:
            return "returned %r" % (self.handle,)
        return "returned %r" % (self.value,)


class WorkerError(Exception):
    """The worker died, hung, or answered out of protocol."""


def _encode(v):
    if isinstance(v, Handle):
        return {"$h": v.n}
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    return v


def _decode(v):
    if isinstance(v, dict):
        if set(v) == {"$h"} and isinstance(v["$h"], int):
            return Handle(v["$h"])
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def _worker_env():
    """PATH, HOME, LANG and the Go toolchain's settings (GOCACHE and the like; the
    grader puts nothing secret there); never the contract's variables."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    for k, v in os.environ.items():
        if (k.startswith("GO") or k == "CGO_ENABLED") and not k.startswith("AGENTBOX"):
            env[k] = v
    return env


class _Worker:
    def __init__(self, root, module, argv):
        self.root, self.module, self.proc = root, module, None
        self.argv = argv or [sys.executable, "-I", "-S", "-B", "-c", _WORKER, module]

    def start(self):
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=self.root, env=_worker_env(),
            close_fds=True, start_new_session=True,
        )
        hello = self._read()
        if "import_error" in hello:
            raise WorkerError("cannot import %s: %s" % (self.module, hello["import_error"]))
        if hello != {"ready": True}:
            raise WorkerError("worker did not start: %r" % (hello,))

    def _read(self):
        deadline = time.monotonic() + _TIMEOUT
        buf = b""
        fd = self.proc.stdout.fileno()
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise WorkerError("no answer within %.0fs" % _TIMEOUT)
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkerError("worker exited (status %s)" % self.proc.poll())
            buf += chunk
            if len(buf) > _MAX_LINE:
                raise WorkerError("answer longer than %d bytes" % _MAX_LINE)
        if buf.count(b"\n") != 1:
            raise WorkerError("more than one answer to one call")
        try:
            out = json.loads(buf)
        except ValueError as e:
            raise WorkerError("answer is not JSON: %s" % e)
        if not isinstance(out, dict):
            raise WorkerError("answer out of protocol: %r" % (out,))
        return out

    def request(self, req):
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write((json.dumps(_encode(req)) + "\n").encode())
        self.proc.stdin.flush()
        out = self._read()
        if not ({"value", "raised", "handle"} & set(out)):
            raise WorkerError("answer out of protocol: %r" % (out,))
        if out.get("raised") == "WorkerError":
            raise WorkerError(out.get("message", ""))
        handle = out.get("handle")
        if handle is not None:
            if not isinstance(handle, int):
                raise WorkerError("answer out of protocol: %r" % (out,))
            handle = Handle(handle)
        return Reply(_decode(out.get("value")), _decode(out.get("args")), out.get("raised"), out.get("message", ""), handle)

    def stop(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass
        self.proc.wait()
        self.proc = None


class _Call:
    """The `call` the spec's tests get."""

    def __init__(self, worker):
        self._w = worker

    def __call__(self, fn, *args, on=None, keep=False):
        req = {"fn": fn, "args": list(args)}
        if on is not None:
            req["on"] = on.n
        if keep:
            req["keep"] = True
        return self._w.request(req)

    def attr(self, h, name):
        return self._w.request({"attr": name, "on": h.n})

    def make(self, value):
        return self._w.request({"make": "value", "value": value}).handle

    def recorder(self):
        return self._w.request({"make": "recorder"}).handle

    def get(self, h):
        return self._w.request({"get": h.n}).value

    def same(self, a, b):
        return self._w.request({"same": [a.n, b.n]}).value


def _nondumpable():
    """Closes this process's /proc files, memory and descriptors to processes of the
    same user (the worker): PR_SET_DUMPABLE 0."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")


def _junit(spec_file, cases, nonce, seed):
    q = xml.sax.saxutils.quoteattr
    module = spec_file[:-3].replace("/", ".")
    counts = {"pass": 0, "fail": 0, "error": 0}
    parts = []
    for name, outcome, text, seconds in cases:
        counts[outcome] += 1
        body = ""
        if outcome != "pass":
            tag = "failure" if outcome == "fail" else "error"
            body = "<%s message=%s>%s</%s>" % (tag, q(text.splitlines()[0][:500] if text else ""), xml.sax.saxutils.escape(text[-8000:]), tag)
        parts.append('<testcase classname=%s name=%s file=%s time="%.3f">%s</testcase>' % (q(module), q(name), q(spec_file), seconds, body))
    xml_text = '<?xml version="1.0" encoding="utf-8"?>\n<testsuites agentbox-nonce=%s agentbox-seed="%d"><testsuite name="agentbox-judge" tests="%d" failures="%d" errors="%d">%s</testsuite></testsuites>\n' % (
        q(nonce), seed, len(cases), counts["fail"], counts["error"], "".join(parts))
    return xml_text, counts


def main(argv):
    _nondumpable()
    results_path = os.environ.pop("AGENTBOX_RESULTS", "")
    nonce = os.environ.pop("AGENTBOX_NONCE", "")
    seed_text = os.environ.pop("AGENTBOX_SEED", "")
    fd = -1
    if results_path:
        fd = os.open(results_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    if len(argv) != 1 or not argv[0].endswith(".py"):
        sys.stderr.write("usage: agentbox_judge.py SPEC.py\n")
        os._exit(2)
    try:
        seed = int(seed_text) if seed_text else int.from_bytes(os.urandom(8), "big") >> 1
    except ValueError:
        sys.stderr.write("agentbox_judge: AGENTBOX_SEED=%r is not an integer\n" % seed_text)
        os._exit(2)
    sys.stderr.write("agentbox_judge: seed %d\n" % seed)
    root = os.getcwd()
    spec_file = argv[0]
    with open(os.path.join(root, spec_file), "rb") as f:
        source = f.read()
    spec = {"__name__": "agentbox_spec", "random": None}
    exec(compile(source, spec_file, "exec"), spec)
    # Nothing the worker could read the checks from stays in the repository.
    for name in (spec_file, os.path.basename(__file__)):
        try:
            os.unlink(os.path.join(root, name))
        except OSError:
            pass
    tmp = tempfile.mkdtemp(prefix="agentbox-judge-")
    place = lambda argv: [a.replace("{tmp}", tmp) for a in argv] if argv else argv
    worker = _Worker(root, spec["MODULE"], place(spec.get("WORKER")))
    call = _Call(worker)
    build_error = None
    if spec.get("BUILD"):
        done = subprocess.run(place(spec["BUILD"]), cwd=root, env=_worker_env(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        if done.returncode != 0:
            build_error = "building the worker failed (%d):\n%s" % (done.returncode, done.stdout.decode("utf-8", "replace")[-8000:])
    cases = []
    for name in sorted(k for k in spec if k.startswith("test_") and callable(spec[k])):
        start = time.monotonic()
        if build_error:
            cases.append((name, "error", build_error, 0.0))
            continue
        spec["random"] = random.Random("%d:%s" % (seed, name))
        try:
            spec[name](call)
            outcome, text = "pass", ""
        except AssertionError as e:
            outcome, text = "fail", "AssertionError: %s\n%s" % (e, traceback.format_exc())
        except WorkerError as e:
            outcome, text = "error", "worker: %s" % e
            worker.stop()
        except Exception:
            outcome, text = "error", traceback.format_exc()
        cases.append((name, outcome, text, time.monotonic() - start))
    worker.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    xml_text, counts = _judge_write(fd, spec_file, cases, nonce, seed)
    sys.stderr.write("agentbox_judge: %d passed, %d failed, %d errors\n" % (counts["pass"], counts["fail"], counts["error"]))
    sys.stderr.flush()
    os._exit(0 if cases and counts["pass"] == len(cases) else 1)


def _judge_write(fd, spec_file, cases, nonce, seed):
    xml_text, counts = _junit(spec_file, cases, nonce, seed)
    if fd >= 0:
        data = xml_text.encode("utf-8", "backslashreplace")
        while data:
            n = os.write(fd, data)
            data = data[n:]
        os.fsync(fd)
        os.close(fd)
    return xml_text, counts


if __name__ == "__main__":
    main(sys.argv[1:])
