"""decree.hermes.CheckpointManager: the behaviours the Hermes agent relies
on, written from its documented behaviour (not from its tests)."""

import os
from pathlib import Path

import pytest

from conftest import read, write

import decree
from decree import hermes
from decree.hermes import CheckpointManager, format_checkpoint_list


@pytest.fixture
def base(tmp_path, monkeypatch):
    b = tmp_path / "hermes-home" / "checkpoints"
    monkeypatch.setattr(hermes, "CHECKPOINT_BASE", b)
    return b


@pytest.fixture
def work(tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    write(d / "app.py", "x = 1\n")
    write(d / "notes.md", "notes\n")
    return d


@pytest.fixture
def mgr(base):
    m = CheckpointManager(enabled=True, max_snapshots=50)
    yield m
    m.close()


def take(m, d, reason):
    m.new_turn()
    return m.ensure_checkpoint(str(d), reason)


def test_disabled_manager_does_nothing(base, work):
    m = CheckpointManager()  # disabled by default
    m.new_turn()
    assert m.ensure_checkpoint(str(work), "x") is False
    m.record_agent_write(str(work / "app.py"))
    assert not base.exists()
    assert m.list_checkpoints(str(work)) == []


def test_constructor_clamps_its_limits():
    m = CheckpointManager(enabled=True, max_snapshots=0, max_total_size_mb=-3, max_file_size_mb=-1)
    assert (m.max_snapshots, m.max_total_size_mb, m.max_file_size_mb) == (1, 0, 0)


def test_one_checkpoint_per_directory_per_turn(mgr, work):
    assert mgr.ensure_checkpoint(str(work), "first") is True
    write(work / "app.py", "x = 2\n")
    assert mgr.ensure_checkpoint(str(work), "again, same turn") is False
    assert len(mgr.list_checkpoints(str(work))) == 1
    # a new turn checkpoints again, because the tree changed
    assert take(mgr, work, "second") is True
    # and not when nothing changed
    assert take(mgr, work, "unchanged") is False
    assert [c["reason"] for c in mgr.list_checkpoints(str(work))] == ["second", "first"]


def test_root_and_home_are_never_checkpointed(mgr, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    write(home / "f.txt", "x\n")
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    assert mgr.ensure_checkpoint("/", "root") is False
    assert mgr.ensure_checkpoint(str(home), "home") is False


def test_an_empty_directory_gets_no_checkpoint(mgr, tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    assert mgr.ensure_checkpoint(str(d), "nothing here") is False
    assert mgr.list_checkpoints(str(d)) == []


def test_list_entries_and_their_change_counts(mgr, work):
    assert mgr.list_checkpoints(str(work)) == []
    assert take(mgr, work, "initial")
    write(work / "app.py", "x = 1\ny = 2\nz = 3\n")
    os.unlink(work / "notes.md")
    assert take(mgr, work, "edited")
    cps = mgr.list_checkpoints(str(work))
    assert [c["reason"] for c in cps] == ["edited", "initial"]
    top = cps[0]
    assert set(top) == {"hash", "short_hash", "timestamp", "reason", "files_changed", "insertions", "deletions"}
    assert len(top["hash"]) == 64 and top["hash"].startswith(top["short_hash"])
    assert "T" in top["timestamp"] and top["timestamp"][-6] in "+-"
    # against the previous checkpoint: app.py +2 lines, notes.md -1 line
    assert (top["files_changed"], top["insertions"], top["deletions"]) == (2, 2, 1)


def test_projects_share_the_store_and_list_apart(mgr, base, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write(a / "f.py", "a\n")
    write(b / "g.py", "b\n")
    assert mgr.ensure_checkpoint(str(a), "A-1")
    assert mgr.ensure_checkpoint(str(b), "B-1")
    assert [c["reason"] for c in mgr.list_checkpoints(str(a))] == ["A-1"]
    assert [c["reason"] for c in mgr.list_checkpoints(str(b))] == ["B-1"]
    assert (base / "decree").is_dir()
    both = mgr.list_all_checkpoints()
    assert sorted(c["workdir"] for c in both) == sorted([str(a.resolve()), str(b.resolve())])


def test_max_snapshots_keeps_the_newest(base, work):
    m = CheckpointManager(enabled=True, max_snapshots=3)
    for i in range(6):
        write(work / "app.py", "v%d\n" % i)
        assert take(m, work, "step-%d" % i)
    assert [c["reason"] for c in m.list_checkpoints(str(work))] == ["step-5", "step-4", "step-3"]
    m.close()


def test_max_total_size_drops_the_oldest(base, work):
    m = CheckpointManager(enabled=True, max_snapshots=50, max_total_size_mb=1, max_file_size_mb=0)
    for i in range(4):
        # 600 KiB of incompressible bytes each time: two of them pass 1 MiB
        write(work / "blob.bin", os.urandom(600 * 1024))
        assert take(m, work, "big-%d" % i)
    cps = m.list_checkpoints(str(work))
    assert cps[0]["reason"] == "big-3"
    assert len(cps) < 4
    m.close()


def test_files_over_max_file_size_are_left_out(base, work):
    m = CheckpointManager(enabled=True, max_file_size_mb=1)
    write(work / "weights.bin", b"\0" * (2 * 1024 * 1024))
    write(work / "exact.bin", b"\1" * (1024 * 1024))  # at the limit: kept
    assert m.ensure_checkpoint(str(work), "initial")
    cp = m.list_checkpoints(str(work))[0]["hash"]
    with decree.Store(work, base / "decree", use_config=False) as s:
        files = {f.path: f for f in s.show(cp).files}
    assert files["exact.bin"].sha256 and files["app.py"].sha256
    assert files["weights.bin"].skip_reason and not files["weights.bin"].sha256
    m.close()


def test_default_excludes_stay_out(mgr, work):
    write(work / "node_modules" / "dep" / "index.js", "x\n")
    write(work / ".env", "SECRET=1\n")
    write(work / "run.log", "log\n")
    assert mgr.ensure_checkpoint(str(work), "initial")
    cp = mgr.list_checkpoints(str(work))[0]["hash"]
    with decree.Store(work, hermes._store_dir(), use_config=False) as s:
        paths = {f.path for f in s.show(cp).files}
    assert paths == {"app.py", "notes.md"}


def test_restore_puts_the_directory_back(mgr, work):
    assert mgr.ensure_checkpoint(str(work), "initial")
    cp = mgr.list_checkpoints(str(work))[0]["hash"]
    write(work / "app.py", "broken\n")
    write(work / "new.txt", "made later\n")
    r = mgr.restore(str(work), cp)
    assert r["success"] is True
    assert r["restored_to"] == cp[:8] and r["reason"] == "initial"
    assert r["directory"] == str(work.resolve())
    assert read(work / "app.py") == b"x = 1\n"
    assert not (work / "new.txt").exists()  # decree's restore cascades
    # the state before the restore was captured: it is listed and restorable
    cps = mgr.list_checkpoints(str(work))
    assert cps[0]["reason"] == "pre-restore"
    assert mgr.restore(str(work), cps[0]["hash"])["success"]
    assert read(work / "app.py") == b"broken\n" and (work / "new.txt").exists()


def test_restore_of_one_file(mgr, work):
    assert mgr.ensure_checkpoint(str(work), "initial")
    cp = mgr.list_checkpoints(str(work))[0]["hash"]
    write(work / "app.py", "changed\n")
    write(work / "notes.md", "changed too\n")
    r = mgr.restore(str(work), cp[:10], file_path="app.py")
    assert r["success"] and r["file"] == "app.py"
    assert read(work / "app.py") == b"x = 1\n"
    assert read(work / "notes.md") == b"changed too\n"


def test_restore_through_a_tilde_path(base, tmp_path, monkeypatch):
    home = tmp_path / "home"
    proj = home / "proj"
    write(proj / "main.py", "original\n")
    monkeypatch.setenv("HOME", str(home))
    m = CheckpointManager(enabled=True)
    assert m.ensure_checkpoint("~/proj", "initial")
    write(proj / "main.py", "changed\n")
    cp = m.list_checkpoints(str(proj))[0]["hash"]
    d = m.diff("~/proj", cp)
    assert d["success"] and "main.py" in d["diff"] and "-original" in d["diff"]
    assert "1 file changed, 1 insertion(+), 1 deletion(-)" in d["stat"]
    assert m.restore("~/proj", cp)["success"]
    assert read(proj / "main.py") == b"original\n"
    m.close()


def test_bad_references_are_refused(mgr, work):
    r = mgr.restore(str(work), "abcd1234")
    assert r == {"success": False, "error": "No checkpoints exist for this directory"}
    assert mgr.ensure_checkpoint(str(work), "initial")
    assert "not found" in mgr.restore(str(work), "deadbeef1234")["error"]
    for bad in ("--patch", "-p"):
        r = mgr.restore(str(work), bad)
        assert not r["success"] and "must not start with '-'" in r["error"]
    for bad in ("abc; rm -rf /", "xyz", "", "ab"):
        assert mgr.restore(str(work), bad)["success"] is False
    assert "expected 4-64 hex characters" in mgr.diff(str(work), "abc&def")["error"]
    assert read(work / "app.py") == b"x = 1\n"


def test_file_path_must_stay_inside(mgr, work):
    assert mgr.ensure_checkpoint(str(work), "initial")
    cp = mgr.list_checkpoints(str(work))[0]["hash"]
    for bad in (str(work.parent / "outside.txt"), "../outside.txt", "a/../../x"):
        r = mgr.restore(str(work), cp, file_path=bad)
        assert r["success"] is False, bad


def test_a_checkpoint_of_another_directory_is_not_found(mgr, work, tmp_path):
    other = tmp_path / "other"
    write(other / "o.txt", "o\n")
    assert mgr.ensure_checkpoint(str(other), "other")
    cp = mgr.list_checkpoints(str(other))[0]["hash"]
    assert mgr.ensure_checkpoint(str(work), "work")
    r = mgr.restore(str(work), cp)
    assert r["success"] is False and "not found" in r["error"]


def test_session_diff(mgr, work):
    assert mgr.session_diff(str(work)) == {"success": True, "stat": "", "diff": "", "empty": True}
    assert mgr.ensure_checkpoint(str(work), "initial")
    write(work / "app.py", "x = 10\n")
    r = mgr.session_diff(str(work))
    assert r["success"] and "+x = 10" in r["diff"] and r["baseline"]
    write(work / "app.py", "x = 1\n")
    assert mgr.session_diff(str(work))["empty"] is True


# --- safe restore: the agent's edits only


def safe_base(m, work):
    assert m.ensure_checkpoint(str(work), "initial")
    m.new_turn()
    return m.list_checkpoints(str(work))[0]["hash"]


def test_safe_restore_reverts_the_agent_and_keeps_the_user(mgr, work):
    cp = safe_base(mgr, work)
    write(work / "app.py", "agent\n")
    mgr.record_agent_write(str(work / "app.py"))
    write(work / "notes.md", "the user's own edit\n")
    r = mgr.restore(str(work), cp, safe=True)
    assert r["success"]
    assert read(work / "app.py") == b"x = 1\n"
    assert read(work / "notes.md") == b"the user's own edit\n"
    assert r["restored_files"] == ["app.py"]
    assert r["skipped_user_edits"] == ["notes.md"]
    assert r["skipped_oversize"] == []


def test_safe_restore_keeps_a_file_the_user_edited_after_the_agent(mgr, work):
    cp = safe_base(mgr, work)
    write(work / "app.py", "agent\n")
    mgr.record_agent_write(str(work / "app.py"))
    write(work / "app.py", "user on top of agent\n")
    r = mgr.restore(str(work), cp, safe=True)
    assert r["success"]
    assert read(work / "app.py") == b"user on top of agent\n"
    assert r["skipped_user_edits"] == ["app.py"] and r["restored_files"] == []


def test_safe_restore_brings_back_what_the_agent_wrote_then_deleted(mgr, work):
    cp = safe_base(mgr, work)
    write(work / "app.py", "agent\n")
    mgr.record_agent_write(str(work / "app.py"))
    os.unlink(work / "app.py")
    r = mgr.restore(str(work), cp, safe=True)
    assert r["success"] and read(work / "app.py") == b"x = 1\n"


def test_safe_restore_removes_a_file_the_agent_created(mgr, work):
    cp = safe_base(mgr, work)
    write(work / "agent.txt", "made by the agent\n")
    mgr.record_agent_write(str(work / "agent.txt"))
    write(work / "notes.md", "user\n")
    r = mgr.restore(str(work), cp, safe=True)
    assert not (work / "agent.txt").exists()
    assert read(work / "notes.md") == b"user\n"
    assert "agent.txt" in r["restored_files"] and r["skipped_user_edits"] == ["notes.md"]


def test_safe_restore_without_agent_writes_is_a_full_restore(mgr, work):
    cp = safe_base(mgr, work)
    write(work / "app.py", "changed, nothing recorded\n")
    r = mgr.restore(str(work), cp, safe=True)
    assert r["success"] and read(work / "app.py") == b"x = 1\n"
    assert "skipped_user_edits" not in r


def test_safe_restore_never_deletes_a_file_no_checkpoint_holds(base, work):
    m = CheckpointManager(enabled=True, max_file_size_mb=1)
    big = work / "corpus.jsonl"
    write(big, b"o" * (2 * 1024 * 1024))
    cp = safe_base(m, work)
    write(big, b"a" * (2 * 1024 * 1024))
    m.record_agent_write(str(big))
    write(work / "app.py", "agent\n")
    m.record_agent_write(str(work / "app.py"))
    r = m.restore(str(work), cp, safe=True)
    assert r["success"]
    assert read(big) == b"a" * (2 * 1024 * 1024)
    assert r["restored_files"] == ["app.py"]
    assert "corpus.jsonl" not in r["skipped_user_edits"]
    m.close()


def test_safe_restore_reverts_a_file_that_grew_past_the_limit(base, work):
    m = CheckpointManager(enabled=True, max_file_size_mb=1)
    cp = safe_base(m, work)
    write(work / "app.py", b"bloated\n" + b"b" * (2 * 1024 * 1024))
    m.record_agent_write(str(work / "app.py"))
    r = m.restore(str(work), cp, safe=True)
    assert read(work / "app.py") == b"x = 1\n"
    assert r["restored_files"] == ["app.py"] and r["skipped_oversize"] == []
    m.close()


def test_unsafe_restore_overwrites_everything(mgr, work):
    cp = safe_base(mgr, work)
    write(work / "app.py", "agent\n")
    mgr.record_agent_write(str(work / "app.py"))
    write(work / "notes.md", "user\n")
    assert mgr.restore(str(work), cp)["success"]
    assert read(work / "app.py") == b"x = 1\n" and read(work / "notes.md") == b"notes\n"


# --- which project a file belongs to


def test_working_dir_of_a_path(mgr, work, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    g = home / "gitproj"
    (g / ".git").mkdir(parents=True)
    write(g / "src" / "m.py", "x\n")
    assert mgr.get_working_dir_for_path(str(g / "src" / "m.py")) == str(g)
    loose = home / "loose" / "f.py"
    write(loose, "x\n")
    write(home / "pyproject.toml", "[project]\n")  # the home is too broad
    assert mgr.get_working_dir_for_path(str(loose)) == str(loose.parent)
    # a checkpointed directory owns its files even under a marked ancestor
    write(work.parent / "pyproject.toml", "[project]\n")
    assert mgr.ensure_checkpoint(str(work), "initial")
    assert mgr.get_working_dir_for_path(str(work / "app.py")) == str(work.resolve())


def test_failures_never_raise(mgr, work, monkeypatch):
    def boom(*a, **k):
        raise decree.CorruptError("simulated", -7)

    monkeypatch.setattr(decree.Store, "create", boom)
    assert mgr.ensure_checkpoint(str(work), "x") is False
    mgr.record_agent_write("/nonexistent/file")


def test_format_checkpoint_list(mgr, work):
    assert format_checkpoint_list([], "/x") == "No checkpoints found for /x"
    assert mgr.ensure_checkpoint(str(work), "initial")
    text = format_checkpoint_list(mgr.list_checkpoints(str(work)), str(work))
    assert "1. " in text and "initial" in text and "(2 files, " in text


def test_manager_matches_the_cli(mgr, work, base):
    """What the manager made is an ordinary decree checkpoint."""
    import json
    import subprocess

    exe = os.environ.get("DECREE")
    if not exe or not os.access(exe, os.X_OK):
        pytest.skip("DECREE (the program) not set")
    assert mgr.ensure_checkpoint(str(work), "initial")
    out = subprocess.run(
        [exe, "--json", "--store", str(base / "decree"), "-C", str(work), "checkpoint", "list"],
        capture_output=True, text=True, check=True,
    ).stdout
    cps = json.loads(out)["checkpoints"]
    assert [c["label"] for c in cps] == ["initial"] and cps[0]["session"] == "hermes"
