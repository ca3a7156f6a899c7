"""agentbox's unittest runner: runs a task's tests and writes JUnit XML for the grader.

The grader copies this file into the repository from the task's hidden/ directory just
before grading; it is never part of the agent's workspace. Run it from the repository
root with the interpreter isolated from the environment and from site-packages:

    python3 -I -S -B agentbox_unittest.py [START_DIR ...]

Each START_DIR (default: tests) is searched for test*.py modules with unittest discovery.

Contract with the grader:
  AGENTBOX_RESULTS  path of a file that must not exist yet; the JUnit XML goes there.
  AGENTBOX_NONCE    per-run random string, echoed as the root's agentbox-nonce attribute.
The runner creates the results file, then starts the interpreter again (exec) with both
variables taken out of its environment, handing the file over as an open descriptor and
the nonce through a pipe: /proc/self/environ shows code in a process the environment
the process started with, whatever os.environ says later.

Exit status: 0 when at least one test ran and none failed or errored; 1 otherwise;
2 when the results file cannot be created or the interpreter cannot start again; 3 when
the code under test changed the machinery the outcomes depend on (the XML then carries
agentbox-error).

Test ids (testcase attributes): file is the module's path relative to the repository,
classname the dotted module path plus the class, name the method. The canonical id is
"file::Class::method", the same string pytest uses as a node id.

What the runner defends against, and what it cannot: everything it needs is imported
before the code under test; the repository is appended to sys.path after the standard
library, so a repository module cannot shadow a standard one; modules found in the
repository load only from .py source (never __pycache__, .pyc, or extension modules,
which could run code a reviewer of the diff never sees). Test modules (every .py file
under the start directories) are read before any code under test runs and compiled only
from those copies, so rewriting, adding or faking a test file at run time does not
change what runs. Suites are built from each test module's own classes: the load_tests
protocol is refused (code under test could plant such a function in a test module).
After the run the runner checks, by identity, that the unittest machinery, builtins,
the standard library modules the tests import, and the test classes' methods are the
objects it loaded, and that every passing test ran a method compiled from a test file.

Code under test still runs in this process, so the runner puts an audit hook (PEP 578,
irremovable) between it and the runner's memory: it refuses, and reports as tampering,
the object graph (gc), other threads' frames, ctypes, tracing, new audit hooks, code
objects named after files elsewhere, opening the process's /proc files (the first
environment, memory, descriptors), and frames taken by code under test (sys._getframe,
tb_frame, gi_frame; inspect.stack and the like when called from it). sys.modules
["__main__"] holds a decoy, not this module. What remains: the runner's objects that
the unittest machinery hands to tests (the result object, and through its methods'
__globals__ this module), and whatever a patch written against this runner finds next;
the grader also reviews patches for the test machinery (see the task package
documentation).
"""

import ast
import builtins
import importlib
import importlib.machinery
import os
import re
import sys
import time
import traceback
import types
import unittest
import unittest.case
import unittest.loader
import unittest.result
import unittest.suite

_MAX_TEXT = 8000
_BAD_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clip(text):
    if len(text) > _MAX_TEXT:
        half = _MAX_TEXT // 2
        text = text[:half] + "\n[... %d characters cut ...]\n" % (len(text) - _MAX_TEXT) + text[-half:]
    return _BAD_XML.sub(lambda m: "\\x%02x" % ord(m.group()) if ord(m.group()) < 0x100 else "\\u%04x" % ord(m.group()), text)


def _attr(text):
    text = _clip(str(text))
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("\n", "&#10;"), ("\r", "&#13;"), ("\t", "&#9;")):
        text = text.replace(a, b)
    return '"' + text + '"'


def _last_line(text):
    lines = str(text).strip().splitlines()
    return lines[-1] if lines else ""


def _body(text):
    text = _clip(str(text))
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")):
        text = text.replace(a, b)
    return text


def _codes(code):
    """Yields a code object and every code object nested in it."""
    stack = [code]
    while stack:
        c = stack.pop()
        yield c
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


class _Trust:
    """What the runner read and compiled itself: every .py file under the start
    directories as it was before any code under test ran, the modules it executed from
    those copies, the code objects it compiled from them, and the test classes it
    collected (with their methods, to compare after the run)."""

    def __init__(self, root, starts):
        self.dirs = [os.path.realpath(os.path.join(root, s)) for s in starts]
        self.sources = {}
        seen = set()
        for top in self.dirs:
            for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
                seen.add(os.path.realpath(dirpath))
                dirnames[:] = [d for d in dirnames if d != "__pycache__" and os.path.realpath(os.path.join(dirpath, d)) not in seen]
                for name in filenames:
                    path = os.path.realpath(os.path.join(dirpath, name))
                    if name.endswith(".py") and os.path.isfile(path):
                        with open(path, "rb") as f:
                            self.sources[path] = f.read()
        self.modules = {}  # module name -> the module object executed from self.sources
        self.codes = {}  # id -> code object compiled from self.sources (kept alive)
        self.classes = {}  # test class (and its bases) -> snapshot of its methods
        self.problems = []  # why tests or the machinery cannot be trusted

    def covers(self, path):
        return any(path == d or path.startswith(d + os.sep) for d in self.dirs)

    def trusted_code(self, fn):
        code = getattr(fn, "__code__", None)
        return code is not None and self.codes.get(id(code)) is code

    def imported_names(self):
        """The absolute module names the test sources import, parents first."""
        names = []
        for source in self.sources.values():
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                found = []
                if isinstance(node, ast.Import):
                    found = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found = [node.module] + [node.module + "." + a.name for a in node.names if a.name != "*"]
                for name in found:
                    parts = name.split(".")
                    names += [".".join(parts[: i + 1]) for i in range(len(parts))]
        return list(dict.fromkeys(names))


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles repository modules from their .py source, ignoring any cached bytecode;
    test modules only from the copies read at start."""

    trust = None  # set per run by _source_only_hook

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        real = os.path.realpath(path)
        if not self.trust.covers(real):
            return self.source_to_code(self.get_data(path), path)
        source = self.trust.sources.get(real)
        if source is None:
            raise ImportError("%s was not there when the run started" % path, name=fullname, path=path)
        code = self.source_to_code(source, path)
        for c in _codes(code):
            self.trust.codes[id(c)] = c
        return code

    def exec_module(self, module):
        super().exec_module(module)
        if self.trust.covers(os.path.realpath(self.get_filename(module.__name__))):
            self.trust.modules[module.__name__] = module


def _source_only_hook(root, trust):
    prefix = root.rstrip(os.sep) + os.sep
    loader = type("_TrustedSourceLoader", (_SourceOnlyLoader,), {"trust": trust})

    def hook(path):
        real = os.path.realpath(path or ".")
        if real == root or real.startswith(prefix):
            return importlib.machinery.FileFinder(path, (loader, [".py"]))
        raise ImportError("not in the repository")

    return hook


def _methods(cls):
    """The methods and properties a class defines, each with its function's code, and
    its bases."""
    out = {"__bases__": (cls.__bases__, None)}
    for name, value in list(vars(cls).items()):
        fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        if isinstance(fn, (types.FunctionType, property)):
            out[name] = (value, getattr(fn, "__code__", None))
    return out


class _TestLoader(unittest.TestLoader):
    """Builds each test module's suite from the test classes in the module's namespace,
    as unittest does, but only for the module object the runner executed from the copy
    of its file, and without the load_tests protocol: a load_tests function is reported,
    never called."""

    def __init__(self, trust):
        super().__init__()
        self.trust = trust

    def loadTestsFromModule(self, module, *args, pattern=None, **kws):
        name = getattr(module, "__name__", "?")
        if self.trust.modules.get(name) is not module:
            self.trust.problems.append("%s is not the module compiled from its file" % name)
            return self.suiteClass()
        if "load_tests" in vars(module):
            self.trust.problems.append("%s has a load_tests function, which this runner does not call" % name)
        tests = []
        for _, obj in sorted(vars(module).items()):
            if isinstance(obj, type) and issubclass(obj, unittest.TestCase) and obj not in (unittest.TestCase, unittest.FunctionTestCase):
                for cls in obj.__mro__:
                    if cls not in self.trust.classes and cls is not object and not cls.__module__.startswith("unittest"):
                        self.trust.classes[cls] = _methods(cls)
                tests.append(self.loadTestsFromTestCase(obj))
        return self.suiteClass(tests)


class _Result(unittest.TestResult):
    """Records one outcome per test, keeping the worst when a test reports twice."""

    _rank = {"pass": 0, "skip": 1, "fail": 2, "error": 3}

    def __init__(self):
        super().__init__()
        self.records = {}
        self.order = []
        self._started = {}

    def _record(self, test, outcome, text=""):
        key = id(test)
        rec = self.records.get(key)
        if rec is None:
            rec = {"test": test, "outcome": outcome, "text": text, "time": 0.0}
            self.records[key] = rec
            self.order.append(key)
        elif self._rank[outcome] > self._rank[rec["outcome"]]:
            rec["outcome"], rec["text"] = outcome, text
        if key in self._started:
            rec["time"] = time.monotonic() - self._started[key]

    def startTest(self, test):
        super().startTest(test)
        self._started[id(test)] = time.monotonic()

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "fail", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "skip", "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "fail", "unexpected success")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self._record(test, kind, "%s\n%s" % (subtest.id(), self._exc_info_to_string(err, test)))


# The objects whose replacement by code under test would let it change outcomes. They
# are compared by identity after the run; a mismatch is reported, not trusted.
_GUARDED_CLASSES = (
    unittest.TestCase,
    unittest.FunctionTestCase,
    unittest.TestSuite,
    unittest.suite.BaseTestSuite,
    unittest.TestResult,
    unittest.TestLoader,
    unittest.case._Outcome,
    _Result,
    _TestLoader,
)
_GUARDED_NAMES = (
    (unittest.case, "_Outcome"),
    (unittest.case, "TestCase"),
    (unittest, "TestCase"),
    (unittest.result, "TestResult"),
    (os, "_exit"),
    (os, "write"),
    (os, "fsync"),
    (sys, "exit"),
)
# Machinery names a test class could override to change its outcome.
_MACHINERY = frozenset(dir(unittest.TestCase))


def _snapshot(modules):
    """Maps what code under test could replace to the object there now. modules are the
    standard library modules the tests import: their functions and classes, and what
    the classes defined in them hold."""
    snap = {}
    for cls in _GUARDED_CLASSES:
        for name, value in list(vars(cls).items()):
            snap[(cls.__module__ + "." + cls.__qualname__, name)] = value
        snap[(cls.__module__ + "." + cls.__qualname__, "__bases__")] = cls.__bases__
    for mod, name in _GUARDED_NAMES:
        snap[(mod.__name__, name)] = getattr(mod, name, None)
    for name, value in list(vars(builtins).items()):
        snap[("builtins", name)] = value
    for name, value in list(globals().items()):
        snap[("__main__", name)] = value
    for i, value in enumerate(sys.meta_path):
        snap[("sys.meta_path", str(i))] = value
    for i, value in enumerate(sys.path_hooks):
        snap[("sys.path_hooks", str(i))] = value
    for name in ("unittest", "unittest.case", "unittest.suite", "unittest.result", "os", "sys", "builtins", "__main__"):
        snap[("sys.modules", name)] = sys.modules.get(name)
    for mod in modules:
        snap[("sys.modules", mod.__name__)] = sys.modules.get(mod.__name__)
        for name, value in list(vars(mod).items()):
            if callable(value):
                snap[(mod.__name__, name)] = value
            if isinstance(value, type) and value.__module__ == mod.__name__:
                for attr, (v, code) in _methods(value).items():
                    snap[(mod.__name__ + "." + value.__qualname__, attr)] = v
                    snap[(mod.__name__ + "." + value.__qualname__, attr + ".__code__")] = code
    return snap


def _changed(before, modules):
    """What differs from before, except names code under test may add to a module."""
    after = _snapshot(modules)
    changed = set()
    for key in set(before) | set(after):
        if before.get(key) is not after.get(key) and (key in before or not any(key[0] == m.__name__ for m in modules)):
            changed.add("%s.%s" % (key[0], key[1].removesuffix(".__code__")))
    return sorted(changed)


def _untrusted(trust, result):
    """Why passing tests cannot be trusted: a class the runner did not collect from a
    test module, a test method not compiled from a test file, a test class whose
    methods changed since, or machinery overridden from outside a test file."""
    problems = []
    for cls, before in trust.classes.items():
        after = _methods(cls)
        for name in sorted(set(before) | set(after)):
            if name in before and (name not in after or before[name][0] is not after[name][0] or before[name][1] is not after[name][1]):
                problems.append("%s.%s.%s changed" % (cls.__module__, cls.__qualname__, name))
            elif name not in before and (name in _MACHINERY or name.startswith("test")):
                problems.append("%s.%s.%s added" % (cls.__module__, cls.__qualname__, name))
    for key in result.order:
        rec = result.records[key]
        test = rec["test"]
        if rec["outcome"] != "pass":
            continue
        cls, method = type(test), getattr(test, "_testMethodName", "")
        where = "%s.%s.%s" % (cls.__module__, cls.__qualname__, method)
        if cls not in trust.classes:
            problems.append("%s: its class was not loaded from a test file" % where)
            continue
        for klass in cls.__mro__:
            if klass not in trust.classes:
                continue
            for name, value in vars(klass).items():
                fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                if (name == method or name in _MACHINERY) and callable(fn) and not isinstance(fn, type) and not trust.trusted_code(fn):
                    problems.append("%s: %s.%s was not compiled from a test file" % (where, klass.__qualname__, name))
        if not trust.trusted_code(getattr(cls, method, None)):
            problems.append("%s: the test method was not compiled from a test file" % where)
        for name, value in vars(test).items():
            if callable(value) and not isinstance(value, type) and hasattr(cls, name):
                problems.append("%s: the test instance overrides %s" % (where, name))
    return list(dict.fromkeys(problems))


def _test_id_parts(root, test):
    """Returns (file, classname, name) for a test case."""
    module = type(test).__module__
    name = getattr(test, "_testMethodName", None) or str(test)
    classname = module + "." + type(test).__qualname__
    mod = sys.modules.get(module)
    path = getattr(mod, "__file__", None) if mod is not None else None
    if path and isinstance(test, unittest.TestCase) and not isinstance(test, unittest.loader._FailedTest):
        rel = os.path.relpath(os.path.realpath(path), root)
        if not rel.startswith(".." + os.sep) and rel != "..":
            return rel.replace(os.sep, "/"), classname, name
    if isinstance(test, unittest.TestCase):
        return "", classname, name
    # An _ErrorHolder: a setUpClass or setUpModule failure, not a test.
    return "", "unittest.suite._ErrorHolder", str(getattr(test, "description", test))


def _junit(root, result, load_errors, nonce, error):
    counts = {"pass": 0, "skip": 0, "fail": 0, "error": 0}
    cases = []
    for key in result.order:
        rec = result.records[key]
        counts[rec["outcome"]] += 1
        path, classname, name = _test_id_parts(root, rec["test"])
        attrs = "classname=%s name=%s" % (_attr(classname), _attr(name))
        if path:
            attrs += " file=%s" % _attr(path)
        attrs += ' time="%.3f"' % rec["time"]
        inner = ""
        if rec["outcome"] == "fail":
            inner = "<failure message=%s>%s</failure>" % (_attr(_last_line(rec["text"])), _body(rec["text"]))
        elif rec["outcome"] == "error":
            inner = "<error message=%s>%s</error>" % (_attr(_last_line(rec["text"])), _body(rec["text"]))
        elif rec["outcome"] == "skip":
            inner = "<skipped message=%s/>" % _attr(rec["text"])
        cases.append("    <testcase %s>%s</testcase>\n" % (attrs, inner))
    for where, text in load_errors:
        counts["error"] += 1
        cases.append('    <testcase classname="agentbox.load" name=%s><error message="cannot load tests">%s</error></testcase>\n' % (_attr(where), _body(text)))
    total = sum(counts.values())
    head = 'name="agentbox-unittest" tests="%d" failures="%d" errors="%d" skipped="%d"' % (total, counts["fail"], counts["error"], counts["skip"])
    root_attrs = head + " agentbox-nonce=%s" % _attr(nonce)
    if error:
        root_attrs += " agentbox-error=%s" % _attr(error)
    xml = '<?xml version="1.0" encoding="utf-8"?>\n<testsuites %s>\n  <testsuite %s>\n%s  </testsuite>\n</testsuites>\n' % (root_attrs, head, "".join(cases))
    ok = total > 0 and counts["fail"] == 0 and counts["error"] == 0
    return xml, ok, counts


_RESTART = "--agentbox-restart="


def _die(code, message):
    sys.stderr.write("agentbox_unittest: %s\n" % message)
    sys.stderr.flush()
    os._exit(code)


def _restart(argv):
    """Creates the results file and starts the interpreter again with the contract's
    variables out of its environment: the file as an inherited descriptor, the nonce in
    a pipe. Does not return."""
    results_path = os.environ.pop("AGENTBOX_RESULTS", "")
    nonce = os.environ.pop("AGENTBOX_NONCE", "")
    if len(nonce) > 1024:
        _die(2, "the nonce is too long")
    fd = -1
    if results_path:
        try:
            fd = os.open(results_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            _die(2, "cannot create the results file: %s" % e.strerror)
        os.set_inheritable(fd, True)
    r, w = os.pipe()
    os.write(w, nonce.encode("utf-8"))
    os.close(w)
    os.set_inheritable(r, True)
    args = [sys.executable, "-I", "-S", "-B", os.path.abspath(sys.argv[0]), "%s%d,%d" % (_RESTART, r, fd)] + argv
    try:
        os.execve(sys.executable, args, dict(os.environ))
    except OSError as e:
        _die(2, "cannot start the interpreter again: %s" % e.strerror)


def _handover(arg):
    """Takes the nonce and the results descriptor _restart handed over."""
    r, fd = (int(x) for x in arg[len(_RESTART) :].split(","))
    data = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        data += chunk
    os.close(r)
    if fd >= 0:
        os.set_inheritable(fd, False)
    return data.decode("utf-8"), fd


# Standard modules whose functions are documented hooks that code may set (sys.excepthook,
# threading.excepthook, warnings.showwarning, logging.setLoggerClass): not compared.
# builtins is compared whole, separately.
_HOOK_MODULES = frozenset(("sys", "builtins", "warnings", "threading", "logging"))


def _preimport(names):
    """Imports the modules the tests name that the standard library provides, before any
    code under test runs (the repository is not on sys.path yet), so that they can be
    compared after the run."""
    modules = []
    for name in names:
        if name in _HOOK_MODULES:
            continue
        try:
            mod = importlib.import_module(name)
        except BaseException:  # noqa: B036 - not a standard module, or one that fails
            continue
        if isinstance(mod, types.ModuleType) and mod not in modules:
            modules.append(mod)
    return modules


# Audit events that code under test never needs and that forgery does: reading the
# runner's memory (the object graph, other threads' frames, C pointers), tracing it,
# adding hooks of its own, and code objects claiming to come from elsewhere.
_FORBIDDEN_EVENTS = frozenset(
    ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames", "sys.settrace", "sys.setprofile",
     "sys.addaudithook", "code.__new__", "sys._getframemodulename", "cpython.remote_debugger_script")
)
_FORBIDDEN_PREFIXES = ("ctypes.", "sys.monitoring.")
# The process's own /proc files: its first environment (with the contract's variables),
# its memory and its descriptors.
_PROC = re.compile(r"^/proc/(self|thread-self|[0-9]+)(/task/[0-9]+)?/(environ|mem|maps|smaps|pagemap|map_files|fd|fdinfo|cmdline|syscall)(/|$)")
# Attributes that hand out a frame, and standard functions that hand their caller one.
_FRAME_ATTRS = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame"))
_FRAME_GETTERS = frozenset(
    (("inspect", "currentframe"), ("inspect", "stack"), ("inspect", "trace"), ("inspect", "getouterframes"),
     ("inspect", "getinnerframes"), ("traceback", "walk_stack"), ("traceback", "walk_tb"), ("__init__", "<lambda>"))
)
_WATCHED = frozenset(("open", "sys._getframe", "object.__getattr__", "compile"))


def _guard(root, trust, violations):
    """Returns an audit hook (PEP 578; it cannot be removed once added) that refuses, by
    raising, what in-process forgery needs, and records each refusal in violations: the
    run is then reported as tampering even if the code under test swallowed the error.
    Frames are refused to code under test (repository files other than the tests), and
    to the standard functions that hand out frames when code under test calls them;
    standard code that takes its own caller's frame (namedtuple, enum, typing, logging)
    or formats tracebacks is not affected."""
    getframe = sys._getframe
    runner = os.path.realpath(__file__)
    kinds = {}
    busy = []

    def under_test(code):
        path = code.co_filename
        kind = kinds.get(path)
        if kind is None:
            real = os.path.realpath(path) if os.path.isabs(path) else path
            kind = real.startswith(root + os.sep) and real != runner and not trust.covers(real)
            kinds[path] = kind
        return kind

    def refuse(what, frame):
        where = "%s:%d" % (frame.f_code.co_filename, frame.f_lineno) if frame is not None else "?"
        violations.append("%s (%s)" % (what, where))
        raise RuntimeError("agentbox_unittest: %s is not allowed to code under test" % what)

    def hook(event, args):
        if busy:
            return
        forbidden = event in _FORBIDDEN_EVENTS or event.startswith(_FORBIDDEN_PREFIXES)
        if not forbidden and event not in _WATCHED:
            return
        busy.append(True)
        try:
            caller = getframe(1)
            if forbidden:
                refuse(event, caller)
            if event == "open":
                path = args[0]
                if isinstance(path, bytes):
                    path = os.fsdecode(path)
                if isinstance(path, str) and _PROC.match(os.path.normpath(os.path.join(root, path))):
                    refuse("opening " + path, caller)
            elif event == "compile":
                # A code object named after a file outside the repository would pass for
                # standard library code below.
                name = args[1] if len(args) > 1 else None
                if isinstance(name, str) and os.path.isabs(name) and under_test(caller.f_code) and not name.startswith(root + os.sep):
                    refuse("compiling code named %s" % name, caller)
            elif event == "sys._getframe" or (event == "object.__getattr__" and args[1] in _FRAME_ATTRS):
                what = "sys._getframe" if event == "sys._getframe" else args[1]
                if under_test(caller.f_code):
                    refuse(what, caller)
                # A standard function that hands out frames, called by code under test
                # (not by the standard library's own users of it, such as traceback
                # formatting or logging's caller lookup).
                module = os.path.splitext(os.path.basename(caller.f_code.co_filename))[0]
                consumer = caller.f_back
                if (module, caller.f_code.co_name) in _FRAME_GETTERS and consumer is not None and under_test(consumer.f_code):
                    refuse("%s.%s" % (module, caller.f_code.co_name), consumer)
        finally:
            busy.pop()

    return hook


def main(argv):
    if not argv or not argv[0].startswith(_RESTART):
        _restart(argv)
    nonce, fd = _handover(argv[0])
    starts = argv[1:] or ["tests"]
    root = os.path.realpath(os.getcwd())
    trust = _Trust(root, starts)

    sys.dont_write_bytecode = True
    sys.path[:] = [p for p in sys.path if p not in ("", ".", root)]
    modules = _preimport(trust.imported_names())
    sys.path_hooks.insert(0, _source_only_hook(root, trust))
    sys.path_importer_cache.clear()
    sys.path.append(root)
    # Code under test finds a decoy at sys.modules["__main__"], not the runner's module,
    # and an audit hook between it and the runner's frames and memory.
    sys.modules["__main__"] = types.ModuleType("__main__", "not the agentbox runner")
    violations = []
    sys.addaudithook(_guard(root, trust, violations))
    before = _snapshot(modules)

    suite = unittest.TestSuite()
    load_errors = []
    for start in starts:
        try:
            suite.addTests(_TestLoader(trust).discover(start, pattern="test*.py", top_level_dir=root))
        except BaseException:  # noqa: B036 - SystemExit from imported code must not stop us
            load_errors.append((start, traceback.format_exc()))

    result = _Result()
    try:
        suite.run(result)
    except BaseException:  # noqa: B036
        load_errors.append(("run", traceback.format_exc()))

    replaced = _changed(before, modules)
    untrusted = trust.problems + _untrusted(trust, result) + ["refused " + v for v in violations]
    error = "; ".join(
        ([("code under test replaced: " + ", ".join(replaced))] if replaced else []) + ([("tests not trusted: " + ", ".join(untrusted))] if untrusted else [])
    )
    xml, ok, counts = _junit(root, result, load_errors, nonce, error)
    if fd >= 0:
        data = xml.encode("utf-8", "backslashreplace")
        while data:
            n = os.write(fd, data)
            data = data[n:]
        os.fsync(fd)
        os.close(fd)
    sys.stderr.write(
        "agentbox_unittest: %d passed, %d failed, %d errors, %d skipped%s\n"
        % (counts["pass"], counts["fail"], counts["error"], counts["skip"], "; TAMPERING: " + error if error else "")
    )
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit skips atexit handlers and joins of threads started by code under test.
    os._exit(3 if error else 0 if ok else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
