"""The agentbox HTTP API client (docs/API.md), standard library only."""

import base64
import http.client
import json
import os
import socket
import time
import urllib.parse
from dataclasses import dataclass, field, fields

from . import errors

__all__ = ["Client", "Environment", "Result", "Event", "FileEntry", "PatchReport", "Artifact", "EventStream",
           "default_socket"]


def _build(cls, d):
    """cls from the JSON object d, keeping the fields cls knows (the API may add more)."""
    names = {f.name for f in fields(cls)}
    obj = cls(**{k: v for k, v in (d or {}).items() if k in names})
    obj.raw = d or {}
    return obj


@dataclass
class Environment:
    id: str = ""
    owner: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    template: str = ""
    mounts: list = field(default_factory=list)
    created_at: str = ""
    expires_at: str = ""
    last_used: str = ""
    state: str = ""
    paused_at: str = ""
    on_timeout: str = ""
    network: dict = None
    snapshot: str = ""
    layer: str = ""
    paused_to_disk: bool = False
    raw: dict = field(default=None, repr=False)


@dataclass
class Result:
    """How a command ended: a failing command is a Result, not an error."""
    exit_code: int = 0
    signal: str = None
    timed_out: bool = False
    cancelled: bool = False
    oom_killed: bool = False
    limit: str = ""
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_ref: str = ""
    stderr_ref: str = ""
    duration_ms: int = 0
    survivors: int = 0
    error: str = ""
    raw: dict = field(default=None, repr=False)

    @property
    def ok(self):
        return self.exit_code == 0 and not self.signal and not self.timed_out and not self.limit


@dataclass
class Event:
    """One event of a background command: kind stdout, stderr (data is bytes) or exit (result)."""
    seq: int = 0
    kind: str = ""
    data: bytes = b""
    result: Result = None


@dataclass
class FileEntry:
    path: str = ""
    name: str = ""
    type: str = ""
    mode: int = 0
    size: int = 0
    mod_time: str = ""
    links: int = 0
    link_target: str = ""
    raw: dict = field(default=None, repr=False)


@dataclass
class PatchReport:
    files: list = field(default_factory=list)  # [{"op", "path", "old_path", "added", "deleted"}]
    raw: dict = field(default=None, repr=False)


@dataclass
class Artifact:
    ref: str = ""
    size: int = 0
    owner: dict = field(default_factory=dict)
    name: str = ""
    env_id: str = ""
    source: str = ""
    raw: dict = field(default=None, repr=False)


def default_socket():
    """The daemon's default Unix socket, as the CLI finds it."""
    s = os.environ.get("AGENTBOX_SOCKET")
    if s:
        return s
    if os.geteuid() == 0:
        return "/run/agentbox/agentbox.sock"
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "agentbox.sock")
    import tempfile
    return os.path.join(tempfile.gettempdir(), "agentbox-%d" % os.geteuid(), "agentbox.sock")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


class Client:
    """A connection to an agentbox daemon.

    Give url ("http://127.0.0.1:7070") or socket (a Unix socket path); with
    neither, $AGENTBOX_URL, else the default socket. The token defaults to
    $AGENTBOX_TOKEN, else the local daemon's token file beside its socket.
    Inside ``agentbox eval --agent-cmd`` both come from the environment.
    """

    def __init__(self, url=None, socket=None, token=None, timeout=600.0):
        url = url or (None if socket else os.environ.get("AGENTBOX_URL"))
        self._socket = None
        if url:
            u = urllib.parse.urlsplit(url)
            if u.scheme != "http" or not u.hostname:
                raise ValueError("agentbox: url %r: want http://HOST:PORT (put a TLS proxy in front for https)" % url)
            self._host, self._port, self._base = u.hostname, u.port or 80, u.path.rstrip("/")
        else:
            self._socket, self._base = socket or default_socket(), ""
        if token is None:
            token = os.environ.get("AGENTBOX_TOKEN")
        if token is None and self._socket:
            try:
                with open(os.path.join(os.path.dirname(self._socket), "agentbox.token")) as f:
                    token = f.read().strip()
            except OSError:
                token = ""
        self._token = token or ""
        self.timeout = timeout

    # -- transport

    def _conn(self, timeout=None):
        t = self.timeout if timeout is None else timeout
        if self._socket:
            return _UnixConnection(self._socket, t)
        return http.client.HTTPConnection(self._host, self._port, timeout=t)

    def _open(self, method, path, query=None, body=None, headers=None, timeout=None):
        """Send a request; return (conn, response) with a 2xx status, else raise."""
        target = self._base + path
        if query:
            target += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None}, doseq=True)
        h = {"Authorization": "Bearer " + self._token} if self._token else {}
        h.update(headers or {})
        conn = self._conn(timeout)
        try:
            conn.request(method, target, body=body, headers=h)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            where = self._socket or "%s:%d" % (self._host, self._port)
            raise errors.ConnectionFailed("agentbox: no daemon answers at %s: %s" % (where, e)) from e
        if resp.status >= 300:
            body = resp.read()
            conn.close()
            raise errors.from_envelope(resp.status, body, resp.getheader("Agentbox-Request-Id", ""))
        return conn, resp

    def _do(self, method, path, query=None, body=None, headers=None, raw=False, timeout=None):
        conn, resp = self._open(method, path, query, body, headers, timeout)
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise errors.ConnectionFailed("agentbox: the connection broke during the answer to %s %s: %r"
                                          % (method, path, e)) from e
        finally:
            conn.close()
        if raw:
            return data, resp
        return json.loads(data) if data.strip() else None

    def _json(self, method, path, obj, query=None, timeout=None):
        return self._do(method, path, query, json.dumps(obj).encode(), {"Content-Type": "application/json"},
                        timeout=timeout)

    @staticmethod
    def _env(id):
        return "/v1/environments/" + urllib.parse.quote(id, safe="")

    # -- environments

    def health(self):
        return self._do("GET", "/healthz")

    def create(self, workspace=None, template=None, limits=None, ttl_seconds=None, idle_timeout_seconds=None,
               labels=None, network=None, mounts=None, task=None, idle_pause_seconds=None, on_timeout=None,
               layer=None):
        """layer: "memory" (default, a tmpfs) or "disk", which pause(to_disk=True) takes out of RAM."""
        req = {k: v for k, v in dict(workspace=workspace, template=template, limits=limits, ttl_seconds=ttl_seconds,
                                     idle_timeout_seconds=idle_timeout_seconds, labels=labels, network=network,
                                     mounts=mounts, task=task, idle_pause_seconds=idle_pause_seconds,
                                     on_timeout=on_timeout, layer=layer).items() if v}
        return _build(Environment, self._json("POST", "/v1/environments", req))

    def get(self, id):
        return _build(Environment, self._do("GET", self._env(id)))

    def list(self, labels=None):
        q = {"label": ["%s=%s" % kv for kv in (labels or {}).items()]} if labels else None
        return [_build(Environment, e) for e in self._do("GET", "/v1/environments", q)["environments"]]

    def pause(self, id, to_disk=False):
        """Freeze every process of the environment until resume; exec raises Paused meanwhile.
        to_disk also takes the writable layer out of RAM (an environment created with layer="disk")."""
        return _build(Environment, self._json("POST", self._env(id) + "/pause", {"to_disk": True} if to_disk else {}))

    def resume(self, id):
        return _build(Environment, self._do("POST", self._env(id) + "/resume"))

    def snapshot(self, id):
        """Snapshot the workspace (O(1)); the environment continues above it, its running commands ended.
        Returns the snapshot as a dict (id, env_id, owner, created_at, depth)."""
        return self._do("POST", self._env(id) + "/snapshot")

    def fork(self, id, count, snapshot=None):
        """Make count environments (1 to 100) from a snapshot of environment id (a new one unless snapshot names one)."""
        body = {"count": count}
        if snapshot:
            body["snapshot"] = snapshot
        return [_build(Environment, e) for e in self._json("POST", self._env(id) + "/fork", body)["environments"]]

    def destroy(self, id):
        self._do("DELETE", self._env(id))

    # -- commands

    @staticmethod
    def _exec_request(argv, env, cwd, stdin, timeout_seconds, output_limit, output_total):
        if isinstance(argv, str):
            raise TypeError("argv is a list (no shell runs it); for a shell line pass ['sh', '-c', line]")
        req = {"argv": list(argv)}
        for k, v in dict(env=env, cwd=cwd, stdin=stdin, timeout_seconds=timeout_seconds, output_limit=output_limit,
                         output_total=output_total).items():
            if v:
                req[k] = v
        return req

    def exec(self, id, argv, env=None, cwd=None, stdin=None, timeout_seconds=None, output_limit=None,
             output_total=None):
        """Run argv to its end and return its Result."""
        req = self._exec_request(argv, env, cwd, stdin, timeout_seconds, output_limit, output_total)
        return _build(Result, self._json("POST", self._env(id) + "/exec", req, timeout=None))

    def run(self, argv, environment=None, env=None, cwd=None, stdin=None, timeout_seconds=None, output_limit=None,
            output_total=None):
        """Run argv in a fresh environment (environment: create's arguments as a dict), destroyed after,
        in one round trip; from a warm pool when one has its shape. Returns its Result."""
        req = {"environment": environment or {},
               "exec": self._exec_request(argv, env, cwd, stdin, timeout_seconds, output_limit, output_total)}
        return _build(Result, self._json("POST", "/v1/run", req, timeout=None))

    def start(self, id, argv, env=None, cwd=None, timeout_seconds=None, output_limit=None, output_total=None):
        """Start argv in the background and return its process id."""
        req = self._exec_request(argv, env, cwd, None, timeout_seconds, output_limit, output_total)
        return self._json("POST", self._env(id) + "/processes", req)["id"]

    def wait(self, id, proc):
        return _build(Result, self._do("GET", self._env(id) + "/processes/%s/wait" % urllib.parse.quote(proc)))

    def events(self, id, proc, after=0, reconnects=8):
        """Iterate over a background command's events (EventStream), resuming after a dropped connection."""
        return EventStream(self, id, proc, after, reconnects)

    def write_stdin(self, id, proc, data, eof=False):
        if isinstance(data, str):
            data = data.encode()
        self._do("POST", self._env(id) + "/processes/%s/stdin" % urllib.parse.quote(proc),
                 {"eof": "true"} if eof else None, data, {"Content-Type": "application/octet-stream"})

    def signal(self, id, proc, sig="TERM"):
        self._json("POST", self._env(id) + "/processes/%s/signal" % urllib.parse.quote(proc), {"signal": sig})

    # -- files

    def read_file(self, id, path, offset=None, length=None):
        data, _ = self._do("GET", self._env(id) + "/files", {"path": path, "offset": offset, "length": length},
                           raw=True)
        return data

    def write_file(self, id, path, data):
        if isinstance(data, str):
            data = data.encode()
        self._do("PUT", self._env(id) + "/files", {"path": path}, data, {"Content-Type": "application/octet-stream"})

    def remove(self, id, path):
        self._do("DELETE", self._env(id) + "/files", {"path": path})

    def list_dir(self, id, path="."):
        return [_build(FileEntry, e) for e in self._do("GET", self._env(id) + "/files/list", {"path": path})["entries"]]

    def stat(self, id, path):
        return _build(FileEntry, self._do("GET", self._env(id) + "/files/stat", {"path": path}))

    def mkdir(self, id, path):
        self._do("POST", self._env(id) + "/files/mkdir", {"path": path})

    def download(self, id, path="."):
        """The tree at path as a tar archive (bytes). An error met mid-archive is raised."""
        conn, resp = self._open("GET", self._env(id) + "/files/tar", {"path": path})
        try:
            data = resp.read()
            trailer = resp.getheader("Agentbox-Error")  # http.client folds trailers into headers
        finally:
            conn.close()
        if trailer:
            raise errors.from_envelope(int(resp.getheader("Agentbox-Error-Status") or 500), trailer.encode())
        return data

    def upload(self, id, path, tar):
        self._do("PUT", self._env(id) + "/files/tar", {"path": path}, tar, {"Content-Type": "application/x-tar"})

    # -- edits

    def apply_patch(self, id, patch):
        """Apply a unified diff, all hunks or none (Conflict when one does not apply)."""
        return _build(PatchReport, self._json("POST", self._env(id) + "/patch", {"patch": patch}))

    def str_replace(self, id, path, old, new):
        """Replace the one occurrence of old in path (Conflict for none or several)."""
        self._json("POST", self._env(id) + "/str-replace", {"path": path, "old": old, "new": new})

    def diff(self, id):
        """The environment's changes as a unified diff (str)."""
        data, _ = self._do("GET", self._env(id) + "/diff", raw=True)
        return data.decode("utf-8", "replace")

    # -- artifacts

    def export(self, id, path):
        return _build(Artifact, self._json("POST", self._env(id) + "/artifacts", {"path": path}))

    def read_artifact(self, ref, offset=None, length=None):
        """(bytes, Artifact) of an artifact."""
        data, resp = self._do("GET", "/v1/artifacts/" + urllib.parse.quote(ref, safe=":"),
                              {"offset": offset, "length": length}, raw=True)
        return data, _build(Artifact, json.loads(resp.getheader("Agentbox-Artifact") or "{}"))


def _lines(resp):
    """The lines of resp's body as they arrive. read1 hands over what a chunk holds
    so far (readline would wait for, and on a cut lose, the whole chunk)."""
    buf = b""
    while True:
        b = resp.read1(65536)
        if not b:
            return  # closed: the caller reconnects
        buf += b
        *lines, buf = buf.split(b"\n")
        for line in lines:
            yield line


class EventStream:
    """The events of a background command, in order, each once.

    A dropped connection is reopened with Last-Event-ID (the last sequence number
    seen), up to ``reconnects`` times in a row with backoff; the daemon then sends
    only the later events. Iteration ends after the exit event (its Result is
    then in ``result``); an ``error`` event raises its APIError.
    """

    def __init__(self, client, id, proc, after, reconnects):
        self._c, self._id, self._proc = client, id, proc
        self.last_id, self.reconnects = after, reconnects
        self.result = None
        self._done = False

    def __iter__(self):
        fails = 0
        while not self._done:
            try:
                for ev in self._once():
                    fails = 0
                    yield ev
            except (OSError, http.client.HTTPException, errors.ConnectionFailed) as e:
                err = e
            else:
                err = None
            if self._done:
                return
            fails += 1
            if fails > self.reconnects:
                raise errors.ConnectionFailed("agentbox: event stream of %s lost after %d reconnects: %s"
                                              % (self._proc, self.reconnects, err or "closed"))
            time.sleep(min(0.05 * 2 ** fails, 2.0))

    def _once(self):
        path = Client._env(self._id) + "/processes/%s/events" % urllib.parse.quote(self._proc)
        headers = {"Accept": "text/event-stream"}
        if self.last_id:
            headers["Last-Event-ID"] = str(self.last_id)
        conn, resp = self._c._open("GET", path, headers=headers, timeout=60)  # pings come every 15 s
        try:
            kind, eid, data = "message", None, []
            for line in _lines(resp):
                line = line.rstrip(b"\r\n")
                if line:
                    if line.startswith(b":"):
                        continue
                    name, _, value = line.partition(b":")
                    value = value[1:] if value.startswith(b" ") else value
                    if name == b"event":
                        kind = value.decode()
                    elif name == b"id":
                        eid = value.decode()
                    elif name == b"data":
                        data.append(value)
                    continue
                if not data:  # retry: and other bare fields
                    kind, eid = "message", None
                    continue
                obj = json.loads(b"\n".join(data))
                k, i = kind, eid
                kind, eid, data = "message", None, []
                if k == "error":
                    self._done = True
                    e = errors.from_envelope(404, obj)
                    raise e
                ev = Event(seq=obj.get("seq", 0), kind=obj.get("kind", k),
                           data=base64.b64decode(obj["data"]) if obj.get("data") else b"",
                           result=_build(Result, obj["result"]) if obj.get("result") else None)
                if i is not None:
                    self.last_id = int(i)
                if ev.kind == "exit":
                    self._done = True
                    self.result = ev.result
                yield ev
                if self._done:
                    return
        finally:
            conn.close()
