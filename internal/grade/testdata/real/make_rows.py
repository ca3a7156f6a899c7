#!/usr/bin/env python3
"""Builds agentbox's real-repository rows from Debian source packages and Go modules.

Each project becomes a git repository whose first commit is the upstream release
(trimmed to what its tests need), followed by one commit per Debian patch (or, for
Go, the next upstream release). A row's base_commit is the parent of its fix
commit; its patch and test_patch split the fix commit's diff into code and tests.
FAIL_TO_PASS and PASS_TO_PASS come from running the row's tests on the host
before (base + test_patch) and after (fix commit).

Needs network: deb-src lines for bookworm (apt-get source) and the Go module proxy.
"""
import json, os, re, shutil, subprocess, sys, tarfile, xml.etree.ElementTree as ET

OUT = sys.argv[1]
WORK = os.path.join(OUT, "work")
GIT_ENV = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
               GIT_COMMITTER_NAME="agentbox testdata", GIT_COMMITTER_EMAIL="testdata@agentbox.invalid")

def run(*args, cwd=None, env=None, check=True, capture=False):
    r = subprocess.run(args, cwd=cwd, env=env or GIT_ENV, check=check,
                       stdout=subprocess.PIPE if capture else None, text=True)
    return r.stdout if capture else r.returncode

def git(repo, *args, **kw):
    return run("git", *args, cwd=repo, **kw)

def commit(repo, msg, author, date):
    git(repo, "add", "-A")
    env = dict(GIT_ENV, GIT_AUTHOR_NAME=author[0], GIT_AUTHOR_EMAIL=author[1],
               GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    run("git", "commit", "-q", "-m", msg, cwd=repo, env=env)
    return git(repo, "rev-parse", "HEAD", capture=True).strip()

def patch_header(path):
    text = open(path, encoding="utf-8").read()
    author = re.search(r"^From: (.*?) <(.*?)>", text, re.M)
    date = re.search(r"^Date: (.*)$", text, re.M)
    subj = re.search(r"^(?:Subject|Description): (?:\[PATCH\] )?(.*)$", text, re.M)
    origin = re.search(r"^(?:Origin|Commit) ?:? ?(.*)$", text, re.M)
    up = re.search(r"^From ([0-9a-f]{40}) ", text, re.M)
    return dict(author=(author.group(1), author.group(2)) if author else ("Debian", "debian@invalid"),
                date=date.group(1) if date else "2025-01-01T00:00:00Z",
                subject=subj.group(1) if subj else os.path.basename(path),
                upstream=up.group(1) if up else (origin.group(1) if origin else ""))

def diff_split(repo, base, fix, is_test):
    files = git(repo, "diff", "--name-only", base, fix, capture=True).split()
    tests = [f for f in files if is_test(f)]
    code = [f for f in files if not is_test(f)]
    patch = git(repo, "diff", "--no-color", base, fix, "--", *code, capture=True) if code else ""
    test_patch = git(repo, "diff", "--no-color", base, fix, "--", *tests, capture=True)
    return patch, test_patch, tests

def junit_outcomes(path):
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        f = tc.get("file"); cls = tc.get("classname"); name = tc.get("name")
        mod = f[:-3].replace("/", ".")
        rest = cls[len(mod) + 1:] if cls.startswith(mod + ".") else ""
        nid = f + "::" + (rest.replace(".", "::") + "::" if rest else "") + name
        bad = tc.find("failure") is not None or tc.find("error") is not None
        skip = tc.find("skipped") is not None
        out[nid] = "fail" if bad else ("skip" if skip else "pass")
    return out

def unittest_outcomes(log):
    out = {}
    for m in re.finditer(r"^(\w+) \(([\w.]+)\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|skipped.*)$", log, re.M):
        name, where, res = m.groups()
        cls = where[:-len(name) - 1] if where.endswith("." + name) else where
        out[f"{name} ({cls})"] = "pass" if res == "ok" else ("skip" if res.startswith("skipped") else "fail")
    return out

def outcomes(tree, row):
    fw = row["framework"]
    if fw == "pytest":
        res = os.path.join(OUT, "results.xml")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **row.get("env", {}))
        subprocess.run(["/usr/bin/python3", "-m", "pytest", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                        "--junitxml=" + res, *row["test_files"]], cwd=tree, env=env, stdout=subprocess.DEVNULL)
        return junit_outcomes(res)
    if fw == "unittest":
        mods = [f[:-3].replace("/", ".") for f in row["test_files"]]
        r = subprocess.run(["/usr/bin/python3", "-m", "unittest", "-v", *mods], cwd=tree,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), stderr=subprocess.PIPE, text=True)
        return unittest_outcomes(r.stderr)
    if fw == "go":
        env = dict(os.environ, GOFLAGS="-mod=mod", GOMODCACHE=os.path.join(OUT, "modcache"), GOPROXY=os.environ.get("ROW_GOPROXY", "https://proxy.golang.org"))
        r = subprocess.run(["go", "test", "-json", "-count=1", "./..."], cwd=tree, env=env, stdout=subprocess.PIPE, text=True)
        out = {}
        for line in r.stdout.splitlines():
            ev = json.loads(line)
            # Top-level tests only: a failing subtest fails its parent.
            if ev.get("Test") and "/" not in ev["Test"] and ev["Action"] in ("pass", "fail", "skip"):
                name = ev["Test"] if row.get("bare_ids") else ev["Package"] + "::" + ev["Test"]
                out[name] = ev["Action"]
        return out
    raise SystemExit("unknown framework " + fw)

def checkout(repo, rev, dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    os.makedirs(dst)
    git(repo, "worktree", "prune")
    run("sh", "-c", f"git archive {rev} | tar -x -C {dst}", cwd=repo)

def make_row(repo, row, fix):
    base = git(repo, "rev-parse", fix + "^", capture=True).strip()
    is_test = row["is_test"]
    patch, test_patch, tests = diff_split(repo, base, fix, is_test)
    row["test_files"] = [t for t in tests if t.endswith((".py", "_test.go"))]
    before = os.path.join(WORK, "before"); after = os.path.join(WORK, "after")
    checkout(repo, base, before)
    subprocess.run(["git", "apply", "-"], cwd=before, input=test_patch, text=True, check=True)
    checkout(repo, fix, after)
    b, a = outcomes(before, row), outcomes(after, row)
    f2p = sorted(t for t, o in a.items() if o == "pass" and b.get(t) != "pass")
    p2p = sorted(t for t, o in a.items() if o == "pass" and b.get(t) == "pass")
    assert f2p, row["instance_id"] + ": no FAIL_TO_PASS test"
    date = git(repo, "log", "-1", "--format=%aI", fix, capture=True).strip()
    return {
        "instance_id": row["instance_id"], "repo": row["repo"], "base_commit": base,
        "patch": patch, "test_patch": test_patch, "problem_statement": row["statement"],
        "hints_text": "", "created_at": date, "version": row["version"],
        "environment_setup_commit": base,
        "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p),
        "origin": row["origin"],
    }

def debian_project(name, orig, debtar, keep, fixes, rows, drop_patch_files=()):
    repo = os.path.join(OUT, "repos", name)
    if os.path.exists(repo):
        shutil.rmtree(repo)
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    tmp = os.path.join(WORK, name)
    shutil.rmtree(tmp, ignore_errors=True); os.makedirs(tmp)
    with tarfile.open(orig) as tf:
        tf.extractall(tmp, filter="data")
    top = os.path.join(tmp, os.listdir(tmp)[0])
    for k in keep:
        src = os.path.join(top, k)
        dst = os.path.join(repo, k)
        if os.path.isdir(src):
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    dtmp = os.path.join(WORK, name + "-debian"); shutil.rmtree(dtmp, ignore_errors=True); os.makedirs(dtmp)
    with tarfile.open(debtar) as tf:
        tf.extractall(dtmp, filter="data")
    pdir = os.path.join(dtmp, "debian", "patches")
    commit(repo, f"{name} {fixes['version']}: upstream release (from {os.path.basename(orig)}, trimmed to {' '.join(keep)})",
           ("upstream", "upstream@invalid"), fixes["date"])
    fix_commits = {}
    for p in open(os.path.join(pdir, "series")).read().split():
        path = os.path.join(pdir, p)
        h = patch_header(path)
        strip = "-p1"
        r = subprocess.run(["git", "apply", "--check", strip, path], cwd=repo, capture_output=True)
        excl = [f"--exclude={x}" for x in drop_patch_files]
        if subprocess.run(["git", "apply", strip, *excl, path], cwd=repo).returncode != 0:
            print("skip patch", p, file=sys.stderr)
            continue
        if not git(repo, "status", "--porcelain", capture=True).strip():
            print("empty patch", p, file=sys.stderr)
            continue
        msg = f"{h['subject']}\n\nDebian patch debian/patches/{p} of {os.path.basename(debtar)}"
        if h["upstream"]:
            msg += f"\nUpstream: {h['upstream']}"
        fix_commits[p] = commit(repo, msg, h["author"], h["date"])
    out = []
    for row in rows:
        r = make_row(repo, row, fix_commits[row["patch"]])
        out.append(r)
    return out

def go_project(name, module, versions, rows):
    repo = os.path.join(OUT, "repos", name)
    shutil.rmtree(repo, ignore_errors=True); os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    mc = os.path.join(OUT, "modcache")
    commits = {}
    for v in versions:
        info = json.loads(run("go", "mod", "download", "-json", f"{module}@{v}", capture=True,
                              env=dict(os.environ, GOMODCACHE=mc, GOFLAGS="-mod=mod")))
        for e in os.listdir(repo):
            if e != ".git":
                p = os.path.join(repo, e)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        for e in os.listdir(info["Dir"]):
            if e == ".github":
                continue
            s = os.path.join(info["Dir"], e)
            (shutil.copytree if os.path.isdir(s) else shutil.copy2)(s, os.path.join(repo, e))
        run("chmod", "-R", "u+w", repo)
        t = json.load(open(info["Info"]))["Time"]
        commits[v] = commit(repo, f"{module} {v}\n\nThe module zip of {module}@{v} from the Go module proxy (sum {info['Sum']}).",
                            ("upstream", "upstream@invalid"), t)
    return [make_row(repo, row, commits[row["version_after"]]) for row in rows]

def is_py_test(f):
    return "/tests/" in "/" + f or os.path.basename(f).startswith("test_")

def is_go_test(f):
    return f.endswith("_test.go") or "/testdata/" in "/" + f

DEB = "/tmp/i12/deb"
rows = []
rows += debian_project("jinja", f"{DEB}/jinja2_3.1.2.orig.tar.gz", f"{DEB}/jinja2_3.1.2-1+deb12u3.debian.tar.xz",
    ["src", "tests", "setup.py", "setup.cfg", "tox.ini", "MANIFEST.in", "README.rst", "LICENSE.rst", "CHANGES.rst"],
    {"version": "3.1.2", "date": "2022-04-28T17:13:32Z"},
    [dict(instance_id="pallets__jinja-CVE-2024-22195", repo="pallets/jinja", version="3.1", framework="pytest",
          patch="0001-xmlattr-filter-disallows-keys-with-spaces.patch", is_test=is_py_test, env={"PYTHONPATH": "src"},
          origin="Debian jinja2 3.1.2-1+deb12u3, debian/patches/0001-xmlattr-filter-disallows-keys-with-spaces.patch (upstream pallets/jinja 77f43366d3a7e0e3b998e3edee6718af544b5487, CVE-2024-22195), on Jinja2 3.1.2",
          statement="The xmlattr filter accepts keys containing spaces.\n\n`{{ {'src=1 onerror=alert(1)': 'x'}|xmlattr }}` renders `src=1 onerror=alert(1)=\"x\"`: a key with a space injects extra attributes into the element, which defeats the filter's escaping (an XSS when keys come from user input).\n\nxmlattr should refuse such keys: raise ValueError(\"Spaces are not allowed in attributes: '<key>'\") when a key contains any whitespace, and keep rendering other keys as today."),
     dict(instance_id="pallets__jinja-CVE-2024-56326", repo="pallets/jinja", version="3.1", framework="pytest",
          patch="0007-Fix-CVE-2024-56326.patch", is_test=is_py_test, env={"PYTHONPATH": "src"},
          origin="Debian jinja2 3.1.2-1+deb12u3, debian/patches/0007-Fix-CVE-2024-56326.patch (backport of upstream pallets/jinja 48b0687e05a5466a91cd5812d604fa37ad0943b4, CVE-2024-56326), on Jinja2 3.1.2",
          statement="The sandbox does not sandbox an indirect call to str.format.\n\nSandboxedEnvironment routes `'{0.x}'.format(obj)` through its safe formatter only when the template calls the format method directly. A template that stores the bound method first and calls it later, for instance through a filter that calls its argument (`{{ ''.format|map... }}`) or `{% set f = '{0.__class__}'.format %}{{ f(x) }}`, reaches str.format unsandboxed and can read attributes the sandbox forbids.\n\nMake the sandbox wrap `str.format` and `str.format_map` when the attribute is looked up (in getattr and getitem), so that any later call, direct or not, goes through the sandboxed formatter; format_map must still take exactly one positional argument and no keyword arguments."),
    ])
rows += debian_project("h11", f"{DEB}/python-h11_0.14.0.orig.tar.gz", f"{DEB}/python-h11_0.14.0-1.1~deb12u1.debian.tar.xz",
    ["h11", "setup.py", "setup.cfg", "pyproject.toml", "tox.ini", "MANIFEST.in", "README.rst", "LICENSE.txt"],
    {"version": "0.14.0", "date": "2022-09-25T15:20:51Z"},
    [dict(instance_id="python-hyper__h11-CVE-2025-43859", repo="python-hyper/h11", version="0.14", framework="pytest",
          patch="0001-Validate-Chunked-Encoding-chunk-footer.patch", is_test=is_py_test,
          origin="Debian python-h11 0.14.0-1.1~deb12u1, debian/patches/0001-Validate-Chunked-Encoding-chunk-footer.patch (upstream python-hyper/h11 114803a29ce50116dc47951c690ad4892b1a36ed, CVE-2025-43859), on h11 0.14.0",
          statement="h11 accepts a malformed chunked body: it does not check the CRLF after each chunk's data.\n\nChunkedReader discards the two bytes that follow a chunk's data without looking at them, so `b\"3\\r\\nxxx__1a\\r\\n\"` is read as the chunk `xxx` followed by a chunk of size 0x1a. A proxy in front of h11 that reads the same bytes differently can be used for request smuggling.\n\nThe reader must require exactly `\\r\\n` after each chunk's data (it may arrive split across reads) and raise LocalProtocolError(\"chunk data missing trailing CRLF\") otherwise."),
    ])
rows += debian_project("xmltodict", f"{DEB}/python-xmltodict_0.13.0.orig.tar.gz", f"{DEB}/python-xmltodict_0.13.0-1.1~deb12u1.debian.tar.xz",
    ["xmltodict.py", "tests", "setup.py", "setup.cfg", "tox.ini", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md"],
    {"version": "0.13.0", "date": "2022-05-08T07:00:00Z"},
    [dict(instance_id="martinblech__xmltodict-CVE-2025-9375", repo="martinblech/xmltodict", version="0.13", framework="unittest",
          patch="0001-Prevent-XML-injection-reject-in-element-attr-names-i.patch", is_test=is_py_test,
          origin="Debian python-xmltodict 0.13.0-1.1~deb12u1, debian/patches/0001-Prevent-XML-injection-reject-in-element-attr-names-i.patch (upstream martinblech/xmltodict 6592b0e2350ffc0d280f379f2188712ac0d2f4c7, CVE-2025-9375), on xmltodict 0.13.0",
          statement="unparse writes element and attribute names as they are given, so a key can inject markup.\n\n`unparse({'m><tag>content</tag': 'unsafe'}, full_document=False)` produces `<m><tag>content</tag>unsafe</m><tag>content</tag>`. The same goes for attribute names (`@a>b`) and @xmlns prefixes.\n\nunparse must raise ValueError for an element name, attribute name or @xmlns prefix that contains '<' or '>' (attribute values stay escaped as today)."),
    ])
rows += go_project("semver", "github.com/Masterminds/semver/v3", ["v3.3.0", "v3.3.1"],
    [dict(instance_id="Masterminds__semver-v3.3.1", repo="Masterminds/semver", version="3.3", framework="go",
          version_after="v3.3.1", is_test=is_go_test,
          origin="github.com/Masterminds/semver/v3 v3.3.0 -> v3.3.1, module zips from the Go module proxy (upstream release v3.3.1: stricter version parsing)",
          statement="NewVersion and StrictNewVersion accept versions that are not valid SemVer.\n\nVersions such as `1.1.2+.123` (empty build metadata segment), `1.0.0-alpha..1` (empty pre-release segment), `01.1.1` (leading zero), `9.8.7+meta+meta` and `1.2.3-0123` parse without an error, and `1.2` is rejected by the loose parser's regular expression in some forms.\n\nMake parsing follow the SemVer 2.0.0 grammar for the numeric parts, pre-release and build metadata (no leading zeros in numeric identifiers, no empty identifiers, one '+' at most) while NewVersion keeps accepting the loose forms it documents (a leading v, missing minor or patch such as 1.2)."),
    ])
rows += go_project("cast", "github.com/spf13/cast", ["v1.9.1", "v1.9.2"],
    [dict(instance_id="spf13__cast-v1.9.2", repo="spf13/cast", version="1.9", framework="go",
          version_after="v1.9.2", is_test=is_go_test, bare_ids=True,
          origin="github.com/spf13/cast v1.9.1 -> v1.9.2, module zips from the Go module proxy (upstream release v1.9.2: number parsing fixes); its tests need github.com/frankban/quicktest",
          statement="Casting strings with a decimal part to integers is wrong, and the errors lose their cause.\n\nToIntE(\"10.abc\") and similar strings succeed because everything from the first '.' is cut off before parsing, ToUintE(\"+5\") fails although the sign is valid, and a failed parse returns \"unable to cast ...\" without the strconv error that caused it.\n\nTrim a decimal part only when the string is a number (an optional sign, digits, then '.' and digits: \"10.0\" -> 10, \"-.5\" -> 0), accept a leading '+' for unsigned types, and wrap the parse error in the returned error."),
    ])
with open(os.path.join(OUT, "rows.jsonl"), "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
owners = {"jinja": "pallets__jinja", "h11": "python-hyper__h11", "xmltodict": "martinblech__xmltodict",
          "semver": "Masterminds__semver", "cast": "spf13__cast"}
for name in os.listdir(os.path.join(OUT, "repos")):
    git(os.path.join(OUT, "repos", name), "bundle", "create", os.path.join(OUT, owners[name] + ".bundle"), "main")
print("wrote", len(rows), "rows")
