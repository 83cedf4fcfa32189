"""Workspaces through the binding (decree/workspace.h), on real files:
the copy is exact, a workspace edit shows in its diff, apply merges it
with the project's own edits, an overlapping edit is a conflict that
writes nothing, and discard is undone by undo (with its notice)."""

import os
import re
import stat

import pytest

import decree
from conftest import read, write


def picture(root):
    """{path: ("file", mode, bytes) | ("link", target)} of every entry
    but .decree: what an exact copy must reproduce."""
    out = {}
    root = str(root)
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel == ".":
            dirs[:] = [x for x in dirs if x != ".decree"]
            files = [x for x in files if x != ".decree"]
        for name in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, name)
            key = os.path.normpath(os.path.join(rel, name))
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(p))
            else:
                out[key] = ("file", stat.S_IMODE(st.st_mode), read(p))
    return out


@pytest.fixture
def tree(project):
    """The project fixture plus an executable, a symlink, an empty file
    and a nested directory: every kind of entry a copy must keep."""
    write(project / "run.sh", "#!/bin/sh\necho run\n", 0o755)
    write(project / "private.txt", "secret\n", 0o600)
    write(project / "empty", "")
    write(project / "deep" / "er" / "leaf.txt", "leaf\n")
    os.symlink("src/util.py", str(project / "link"))
    write(project / "text.txt", "".join("line %d\n" % i for i in range(1, 21)))
    return project


def test_create_is_an_exact_copy(store, tree):
    before = picture(tree)
    ws = store.workspace_create()
    assert isinstance(ws, decree.Workspace)
    assert ws.name == "ws-1"
    assert ws.path == os.path.join(store.path, "workspaces", "ws-1")
    assert ws.project == store.root
    assert re.fullmatch("[0-9a-f]{64}", ws.base)
    assert store.resolve(ws.base) == ws.base  # a checkpoint of the project
    assert store.get(ws.base).tree == ws.base_tree
    assert ws.created_ns > 0
    assert ws.mode in ("reflink", "copy", "mixed")
    assert ws.reflink_verified == (ws.mode == "reflink")
    regular = [v for v in before.values() if v[0] == "file"]
    c = ws.copy
    assert c.cloned + c.copied + c.from_store == len(regular)
    assert c.links == 1
    assert c.bytes == sum(len(v[2]) for v in regular)
    assert c.dirs >= 3  # src, deep, deep/er
    assert picture(ws.path) == before  # bytes, modes, symlinks
    assert picture(tree) == before  # the project untouched

    # --no-reflink: copies only; a given name
    ws2 = store.workspace_create("plain", no_reflink=True)
    assert ws2.name == "plain" and ws2.mode == "copy"
    assert ws2.copy.cloned == 0 and not ws2.reflink_verified
    assert picture(ws2.path) == before


def test_create_from_an_older_checkpoint(store, tree):
    old = store.create(session="s", message="old")
    old_pic = picture(tree)
    write(tree / "main.py", "print('newer')\n")
    os.remove(str(tree / "empty"))
    ws = store.workspace_create("old", from_=old.id[:12])
    assert ws.base == old.id
    assert picture(ws.path) == old_pic
    with pytest.raises(decree.NotFoundError):
        store.workspace_create("nope", from_="ffffffffffff")


def test_list_get_path_and_errors(store, tree):
    assert store.workspace_list() == []
    a = store.workspace_create("b-second")
    b = store.workspace_create("a-first")
    names = [w.name for w in store.workspace_list()]
    assert names == ["a-first", "b-second"]
    got = store.workspace_get("b-second")
    assert got == a
    assert store.workspace_path("a-first") == b.path
    with pytest.raises(decree.NotFoundError) as e:
        store.workspace_get("missing")
    assert e.value.code == -3 and e.value.name == "DECREE_ENOTFOUND"
    assert "missing" in e.value.message
    with pytest.raises(decree.ExistsError) as e:
        store.workspace_create("a-first")
    assert e.value.code == -4
    with pytest.raises(decree.InvalidError) as e:
        store.workspace_create("../escape")
    assert e.value.code == -9
    assert not os.path.exists(os.path.join(store.path, "escape"))
    with pytest.raises(decree.NotFoundError):
        store.workspace_diff("missing")


def test_diff_shows_the_workspace_edit(store, tree):
    ws = store.workspace_create("w")
    assert len(store.workspace_diff("w")) == 0
    write(os.path.join(ws.path, "main.py"), "print('hello')\nprint('from ws')\n")
    write(os.path.join(ws.path, "new.txt"), "new\n")
    os.remove(os.path.join(ws.path, "README.md"))
    d = store.workspace_diff("w")
    by = {f.path: f for f in d}
    assert sorted(by) == ["README.md", "main.py", "new.txt"]
    assert by["main.py"].status == "M" and by["main.py"].added == 1
    assert "+print('from ws')\n" in by["main.py"].text
    assert by["new.txt"].status == "A" and by["README.md"].status == "D"
    assert d.insertions == 2 and d.deletions == 1
    # the same records as a checkpoint diff of the same change
    nt = store.workspace_diff("w", no_text=True, paths=["main.py"])
    assert [(f.path, f.text) for f in nt] == [("main.py", None)]
    # the project does not see any of it
    assert read(tree / "main.py") == b"print('hello')\n"


def test_apply_merges_with_project_edits_and_undo(store, tree):
    ws = store.workspace_create("w")
    lines = ["line %d\n" % i for i in range(1, 21)]
    # the workspace edits the top of text.txt and adds a file ...
    theirs = list(lines)
    theirs[1] = "line 2 (workspace)\n"
    write(os.path.join(ws.path, "text.txt"), "".join(theirs))
    write(os.path.join(ws.path, "added.txt"), "from the workspace\n")
    # ... while the project edits the bottom of it and another file
    ours = list(lines)
    ours[18] = "line 19 (project)\n"
    write(tree / "text.txt", "".join(ours))
    write(tree / "main.py", "print('project')\n")
    c = store.workspace_conflicts("w")
    assert c.clean and not c and c.conflicts == []
    assert c.changes == 2 and c.files >= 2
    assert read(tree / "text.txt") == "".join(ours).encode()  # check only

    r = store.workspace_apply("w", check=True)
    assert (r.created, r.modified, r.conflicts) == (1, 1, 0)
    assert not os.path.exists(str(tree / "added.txt"))

    r = store.workspace_apply("w", session="review")
    assert (r.created, r.modified, r.deleted, r.conflicts) == (1, 1, 0, 0)
    assert {(x.path, x.action) for x in r.report} >= {("added.txt", "create"), ("text.txt", "modify")}
    merged = list(lines)
    merged[1] = theirs[1]
    merged[18] = ours[18]
    assert read(tree / "text.txt") == "".join(merged).encode()
    assert read(tree / "added.txt") == b"from the workspace\n"
    assert read(tree / "main.py") == b"print('project')\n"  # the project's own edit stays
    # applying again: nothing left to do (and nothing pushed on the history)
    again = store.workspace_apply("w")
    assert (again.created, again.modified, again.deleted) == (0, 0, 0)

    store.undo()
    assert read(tree / "text.txt") == "".join(ours).encode()
    assert not os.path.exists(str(tree / "added.txt"))


def test_overlapping_edit_is_a_conflict_and_writes_nothing(store, tree):
    ws = store.workspace_create("w")
    write(os.path.join(ws.path, "main.py"), "print('workspace')\n")
    write(os.path.join(ws.path, "other.txt"), "would be created\n")
    write(tree / "main.py", "print('project')\n")
    before = picture(tree)

    c = store.workspace_conflicts("w")
    assert not c.clean and c
    assert [x.path for x in c.conflicts] == ["main.py"]
    assert c.conflicts[0].action == "conflict"
    assert "main.py" in c.conflicts[0].detail

    with pytest.raises(decree.ConflictError) as e:
        store.workspace_apply("w")
    assert e.value.code == -6 and e.value.name == "DECREE_ECONFLICT"
    conf = [x for x in e.value.report if x.action == "conflict"]
    assert [x.path for x in conf] == ["main.py"] and conf[0].detail
    assert e.value.result.conflicts == 1
    assert picture(tree) == before  # nothing written, not even other.txt
    with pytest.raises(decree.NotFoundError):
        store.undo()  # and nothing pushed on the history


def test_apply_exec_failure_rolls_back(store, tree):
    ws = store.workspace_create("w")
    write(os.path.join(ws.path, "main.py"), "print('workspace')\n")
    before = picture(tree)
    with pytest.raises(decree.ExecError) as e:
        store.workspace_apply("w", exec="exit 3")
    assert e.value.result.exec_ran and e.value.result.exec_status == 3
    assert picture(tree) == before
    r = store.workspace_apply("w", exec="grep -q workspace main.py")
    assert r.exec_ran and r.exec_status == 0 and r.modified == 1


def test_discard_then_undo_brings_it_back(store, tree):
    ws = store.workspace_create("w")
    write(os.path.join(ws.path, "main.py"), "print('unsaved work')\n")
    write(os.path.join(ws.path, "notes.txt"), "only in the workspace\n")
    kept = picture(ws.path)

    capture = store.workspace_discard("w")
    assert re.fullmatch("[0-9a-f]{64}", capture)
    assert not os.path.exists(ws.path)
    assert store.workspace_list() == []
    with pytest.raises(decree.NotFoundError):
        store.workspace_get("w")

    r = store.undo()
    ns = [n for n in r.notices if n.kind == "workspace"]
    assert len(ns) == 1
    n = ns[0]
    assert n.label == "w" and n.path == ws.path and n.count == 1
    assert "w" in n.message
    assert picture(ws.path) == kept  # the edits are back too
    assert store.workspace_get("w").base == ws.base
    assert read(tree / "main.py") == b"print('hello')\n"  # the project untouched

    r = store.redo()
    n = [n for n in r.notices if n.kind == "workspace"][0]
    assert n.count == 0 and n.label == "w"
    assert not os.path.exists(ws.path)
    with pytest.raises(decree.NotFoundError):
        store.workspace_discard("w")


def test_the_readme_example(project, tmp_path, capsys):
    """The workspace example of README.md runs as written on a project
    (its root substituted) and does what it says."""
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    m = re.search(r"## Example: work in a workspace[^\n]*\n+```python\n(.*?)```", readme, re.S)
    assert m, "README.md has the workspace example"
    code = m.group(1).replace('"/work/app"', repr(str(project)))
    write(project / "app.py", "app()\n")
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == "[('M', 'app.py')]\n"
    assert read(project / "app.py") == b"app(fixed=True)\n"
    assert read(project / "main.py") == b"print('hello')\n"
    with decree.Store(project) as s:
        assert s.workspace_list() == []  # discarded
        r = s.undo()  # the discard
        assert [n.kind for n in r.notices] == ["workspace"]
        assert os.path.isdir(s.workspace_path("try-fix"))

    # the same line edited in the project meanwhile: the conflict is
    # printed and nothing is written
    code2 = code.replace("    c = s.workspace_conflicts", "    open(%r, 'w').write('app(other=True)\\n')\n    c = s.workspace_conflicts" % str(project / "app.py"))
    code2 = code2.replace('"try-fix"', '"try-2"')
    write(project / "app.py", "app()\n")
    exec(compile(code2, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("[('M', 'app.py')]\n'app.py': ")
    assert read(project / "app.py") == b"app(other=True)\n"
