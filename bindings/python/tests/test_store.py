"""decree.Store: every call against the real library, on real trees."""

import os
import threading

import pytest

from conftest import read, write

import decree


def test_version_and_loading():
    assert decree.version() == decree.__version__


def test_create_list_show(store, project):
    c = store.create("s1", message="turn-1", label="first prompt")
    assert c.created and len(c.id) == 64 and len(c.tree) == 64
    again = store.create("s1", message="turn-1")
    assert not again.created and again.id == c.id
    assert [n.kind for n in again.notices] == ["existing"]
    same = store.create("s1", if_changed=True)
    assert not same.created and same.id == c.id
    write(project / "main.py", "print('bye')\n")
    c2 = store.create("s1", label="second")
    assert c2.created and c2.tree != c.tree
    cps = store.list("s1", has_changes=True)
    assert [x.id for x in cps] == [c.id, c2.id]
    assert cps[0].label == "first prompt" and cps[0].message == "turn-1"
    assert cps[0].has_changes and not cps[1].has_changes
    assert cps[0].file_count == 3 and cps[0].created_at.endswith("Z")
    assert (cps[1].files_changed, cps[1].insertions, cps[1].deletions) == (1, 1, 1)
    assert store.list("other") == []
    assert store.resolve(c.id[:8]) == c.id
    assert store.resolve("s1:turn-1") == c.id
    snap = store.show(c.id)
    assert sorted(f.path for f in snap.files) == ["README.md", "main.py", "src/util.py"]
    assert all(f.mode == 0o644 and len(f.sha256) == 64 for f in snap.files)
    assert store.get(c.id[:6]).label == "first prompt"


def test_errors_carry_code_and_message(store):
    with pytest.raises(decree.NotFoundError) as e:
        store.resolve("abcdef12")
    assert e.value.code == -3 and e.value.name == "DECREE_ENOTFOUND"
    assert "abcdef12" in e.value.message
    with pytest.raises(decree.InvalidError) as e:
        store.restore("not-a-ref")
    assert e.value.code == -9 and isinstance(e.value, ValueError)
    with pytest.raises(decree.NotFoundError):
        store.undo()
    assert isinstance(e.value, decree.DecreeError)


def test_open_errors(tmp_path):
    with pytest.raises(decree.DecreeError):
        decree.Store(tmp_path / "missing")
    s = decree.Store(tmp_path)
    s.close()
    s.close()
    with pytest.raises(ValueError):
        s.list()


def test_diff_compare_and_patch_files(store, project):
    c = store.create()
    write(project / "main.py", "print('hello')\nprint('more')\n")
    write(project / "new.bin", b"\0\1\2")
    os.unlink(project / "README.md")
    ch = {x.path: x.status for x in store.compare(c.id)}
    assert ch == {"main.py": "M", "new.bin": "A", "README.md": "D"}
    d = store.diff(c.id)
    assert [f.path for f in d] == ["README.md", "main.py", "new.bin"]
    by = {f.path: f for f in d}
    assert by["main.py"].added == 1 and "+print('more')" in by["main.py"].text
    assert by["new.bin"].binary
    assert d.text.startswith("diff --git a/README.md b/README.md")
    assert [f.path for f in store.diff(c.id, paths=["main.py"])] == ["main.py"]
    assert all(f.text is None for f in store.diff(c.id, no_text=True))
    files = decree.patch_files(d.text)
    assert [(f.path, f.status) for f in files] == [("README.md", "D"), ("main.py", "M"), ("new.bin", "A")]
    c2 = store.create()
    assert [f.path for f in store.diff(c.id, c2.id)] == ["README.md", "main.py", "new.bin"]


def test_restore_undo_redo(store, project):
    c = store.create()
    write(project / "main.py", "changed\n")
    write(project / "extra.txt", "new\n")
    os.chmod(project / "README.md", 0o600)
    plan = store.restore(c.id, dry_run=True).plan
    assert {(p.path, p.action) for p in plan} == {
        ("main.py", "restore"), ("extra.txt", "delete"), ("README.md", "restore")}
    assert read(project / "main.py") == b"changed\n"  # dry run: nothing written
    seen = []
    r = store.restore(c.id, on_plan=seen.append)
    assert (r.restored, r.deleted, r.created) == (2, 1, 0) and len(seen) == 3
    assert read(project / "main.py") == b"print('hello')\n"
    assert not (project / "extra.txt").exists()
    assert os.stat(project / "README.md").st_mode & 0o777 == 0o644
    assert any(x.id == r.pre_checkpoint and x.is_capture for x in store.list())
    u = store.undo()
    assert read(project / "main.py") == b"changed\n" and (project / "extra.txt").exists()
    assert u.changed == 3
    store.redo()
    assert read(project / "main.py") == b"print('hello')\n"


def test_restore_paths_only(store, project):
    c = store.create()
    write(project / "main.py", "a\n")
    write(project / "README.md", "b\n")
    store.restore(c.id, ["main.py"])
    assert read(project / "main.py") == b"print('hello')\n" and read(project / "README.md") == b"b\n"


def test_plan_callback_exception_cancels(store, project):
    c = store.create()
    write(project / "main.py", "changed\n")

    def no(entry):
        raise RuntimeError("user said no")

    with pytest.raises(RuntimeError):
        store.restore(c.id, on_plan=no)
    assert read(project / "main.py") == b"changed\n"


def test_cancel_flag(store, project):
    c = store.create()
    write(project / "main.py", "changed\n")
    flag = decree.Cancel()
    flag.set()
    with pytest.raises(decree.CancelledError) as e:
        store.restore(c.id, cancel=flag)
    assert e.value.code == -14
    assert read(project / "main.py") == b"changed\n"


def test_apply_check_conflict_exec_and_undo(store, project):
    patch = (
        "--- a/main.py\n+++ b/main.py\n@@ -1 +1,2 @@\n print('hello')\n+print('patched')\n"
    )
    r = store.apply(patch, check=True)
    assert r.modified == 1 and read(project / "main.py") == b"print('hello')\n"
    phases = []
    r = store.apply(patch, on_progress=lambda ph, p, a: phases.append(ph))
    assert r.modified == 1 and b"patched" in read(project / "main.py")
    assert "done" in phases
    with pytest.raises(decree.ConflictError) as e:
        store.apply(patch.replace("print('hello')\n+", "print('nope')\n+"))
    assert e.value.report and e.value.report[0].action == "conflict"
    store.undo()
    assert read(project / "main.py") == b"print('hello')\n"
    with pytest.raises(decree.ExecError) as e:
        store.apply(patch, exec="exit 3")
    assert e.value.result.exec_status == 3
    assert read(project / "main.py") == b"print('hello')\n"
    with pytest.raises(decree.InvalidError):
        store.apply("this is not a patch\n")


def test_prune_drop_delete_gc_fsck(store, project):
    ids = []
    for i in range(5):
        write(project / "main.py", "v%d\n" % i)
        ids.append(store.create("a").id)
    store.create("b")
    assert store.prune("a", keep=2) == 3
    assert [c.id for c in store.list("a")] == ids[-2:]
    store.delete(ids[-2])
    assert [c.id for c in store.list("a")] == ids[-1:]
    with pytest.raises(decree.NotFoundError):
        store.delete(ids[0])
    assert store.gc(dry_run=True).objects_freed > 0
    g = store.gc()
    assert g.objects_freed > 0 and store.gc().objects_freed == 0
    assert store.fsck().clean
    assert store.drop("b") == 1
    assert store.drop_all() == 1 and store.list() == []
    with pytest.raises(TypeError):
        store.drop(None)


def test_fsck_reports_damage(store, project):
    store.create()
    damaged = 0
    for dirpath, _d, files in os.walk(store.path):
        for f in files:
            p = os.path.join(dirpath, f)
            if "objects" in p or "pack" in p:
                os.chmod(p, 0o644)
                with open(p, "r+b") as fh:
                    fh.seek(-1, 2)
                    b = fh.read(1)
                    fh.seek(-1, 2)
                    fh.write(bytes([b[0] ^ 0xFF]))
                damaged += 1
    assert damaged
    r = store.fsck()
    assert not r.clean and r.problems and r.problems[0].kind == "damaged"


def test_recover_nothing_to_do(store):
    assert store.recover().recovered is False


def test_agent_journal_and_rewind(store, project):
    t1 = store.agent_turn("sess-1", agent="claude-code", message="p1", prompt="fix it\nmore")
    assert t1.turn == 1 and t1.started
    assert store.agent_turn("sess-1", message="p1").started is False
    write(project / "main.py", "agent wrote\n")
    assert store.agent_record_paths("sess-1", ["main.py"], tool="Write") == 1
    store.agent_tool_start("sess-1", "Bash", "t1")
    write(project / "made.txt", "by a shell command\n")
    assert store.agent_record_scan("sess-1", "Bash", "t1") >= 1
    write(project / "README.md", "user edit\n")
    rl = store.rewind_list()
    assert rl.session == "sess-1" and rl.agent == "claude-code"
    assert [t.prompt for t in rl.turns] == ["fix it"]
    assert rl.turns[0].files == ["made.txt", "main.py"]
    assert [s.session for s in store.agent_sessions()] == ["sess-1"]
    r = store.rewind(1, agent_only=True)
    assert read(project / "main.py") == b"print('hello')\n"
    assert not (project / "made.txt").exists()
    assert read(project / "README.md") == b"user edit\n"  # not the agent's
    assert r.restored == 1 and r.deleted == 1


def test_agent_only_skips_user_edits(store, project):
    t = store.agent_turn("s", message="m")
    write(project / "main.py", "agent\n")
    store.agent_record_paths("s", ["main.py"])
    write(project / "main.py", "user after agent\n")
    r = store.restore(t.checkpoint, agent_only=True)
    assert r.skipped_user_edits == 1
    assert [(p.path, p.action) for p in r.plan] == [("main.py", "skip-user-edit")]
    assert read(project / "main.py") == b"user after agent\n"


def test_create_options_are_kept(store, project):
    write(project / "big.bin", b"x" * 5000)
    write(project / "skip.tmp", "tmp\n")
    c = store.create(excludes=["*.tmp"], max_file_size=1000)
    files = {f.path: f for f in store.show(c.id).files}
    assert "skip.tmp" not in files and files["big.bin"].skip_reason
    assert any(n.kind == "too_large" for n in c.notices)
    os.unlink(project / "main.py")
    store.restore(c.id)  # never deletes what the rules left out
    assert (project / "skip.tmp").exists() and (project / "big.bin").exists()
    assert (project / "main.py").exists()


def test_progress_callback(store, project):
    seen = []
    store.set_progress(lambda p: seen.append(p.stage))
    store.create()
    assert "scan" in seen
    store.set_progress(None)
    seen.clear()
    write(project / "main.py", "x\n")
    store.create()
    assert seen == []


def test_projects_and_move(store, project, tmp_path):
    store.create()
    p = store.projects()
    assert len(p) == 1 and p[0].is_current and p[0].checkpoints == 1
    new = tmp_path / "moved"
    os.rename(project, new)
    store.move_project(project, new)
    with decree.Store(new, tmp_path / "store") as s2:
        assert len(s2.list()) == 1


def test_projects_name_workspaces(store, project):
    store.create()
    assert [q.workspace for q in store.projects()] == [None]
    ws = store.workspace_create("w")
    named = {q.root: q.workspace for q in store.projects()}
    assert named == {str(project): None, ws.path: "w"}, named


def test_missing_root(store, project, tmp_path):
    store.create()
    store.close()
    os.rename(project, tmp_path / "elsewhere")
    with decree.Store(project, tmp_path / "store", missing_root=True) as s:
        assert not s.root_exists and len(s.list()) == 1


def test_config_and_project(tmp_path):
    root = tmp_path / "p"
    made = decree.init_project(root.mkdir() or root)
    assert ".decree/config.yml" in made
    sub = root / "a" / "b"
    sub.mkdir(parents=True)
    pr = decree.Project(sub)
    assert pr.root == str(root.resolve())
    assert pr.config.max_retries == 3 and pr.config.default_routine == "develop"
    write(root / "f.txt", "x\n")
    with pr.store() as s:
        assert s.path == str(root.resolve() / ".decree" / "store")
        s.create()
        assert len(s.list()) == 1


def test_threads_use_their_own_stores(project, tmp_path):
    errors = []
    # the store exists first: several writers creating a new store at the
    # same instant can fail ("cannot rename 'DECREE-STORE'", also with
    # processes: a library issue, reported, not the binding's)
    with decree.Store(project, tmp_path / "store") as s:
        s.create("t-first")

    def work(i):
        try:
            with decree.Store(project, tmp_path / "store") as s:
                s.create("t%d" % i)
                with pytest.raises(decree.NotFoundError):
                    s.resolve("ffff0000")
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    with decree.Store(project, tmp_path / "store") as s:
        assert len(s.list()) == 5


def test_context_manager_closes(project, tmp_path):
    with decree.Store(project, tmp_path / "st") as s:
        pass
    assert repr(s) == "<decree.Store closed>"
