"""A drop-in for the Hermes agent's CheckpointManager, on decree.

The Hermes agent (NousResearch/hermes-agent, tools/checkpoint_manager.py)
snapshots a working directory before the first file-changing tool of each
turn into a shadow git repository.  This module offers the same class with
the same methods and result dictionaries, so an agent switches engines by
changing one import::

    from decree.hermes import CheckpointManager

Written from the public behaviour of that class (its docstrings and tests
read as a specification); none of its code is used.  What maps to what:

- one decree store shared by every project (``CHECKPOINT_BASE/decree``,
  ``CHECKPOINT_BASE`` being ``$HERMES_HOME/checkpoints``, default
  ``~/.hermes/checkpoints``), keyed by the project's absolute path, as the
  shadow store keeps one ref per project;
- a checkpoint is a decree checkpoint of session ``hermes`` whose label is
  the reason, made only when the tree differs from the last one; it also
  starts a turn of the ``hermes`` agent journal, so that
  :meth:`CheckpointManager.record_agent_write` feeds decree's agent-write
  journal and ``restore(..., safe=True)`` is decree's agent-only restore;
- ``max_file_size_mb`` and the default excludes are decree scan rules kept
  in every checkpoint (a restore never deletes what they leave out);
- ``max_snapshots`` and ``max_total_size_mb`` prune the oldest records of
  the project, then ``gc`` frees their storage.

Differences, on purpose: a full restore is decree's cascading restore
(files created after the checkpoint are deleted too, not only changed
ones put back), every restore is one crash-safe transaction, and the state
before it is captured and listed as a ``pre-restore`` checkpoint (Hermes
takes a "pre-rollback snapshot" commit for the same reason).
"""

from __future__ import annotations

import datetime
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Set

from .core import Store
from .errors import DecreeError, NotFoundError

logger = logging.getLogger(__name__)

#: Where the store lives: ``CHECKPOINT_BASE / "decree"``.  Read at each
#: call, so a test (or an application) may point it elsewhere.
CHECKPOINT_BASE = Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes") / "checkpoints"
STORE_DIRNAME = "decree"
#: The decree session (and agent journal) of every Hermes checkpoint.
SESSION = "hermes"

#: Left out of every checkpoint: dependencies and build output, caches,
#: virtual environments, other version control, compiled and media
#: files, secrets, OS junk and logs (decree never scans .git/ anyway).
DEFAULT_EXCLUDES = [
    "node_modules/", "dist/", "build/", "target/", "out/", ".next/", ".nuxt/",
    "__pycache__/", "*.py[co]", ".cache/", ".pytest_cache/", ".mypy_cache/",
    ".ruff_cache/", "coverage/", ".coverage",
    ".venv/", "venv/", "env/",
    ".hg/", ".svn/", ".worktrees/",
    "*.so", "*.dylib", "*.dll", "*.o", "*.a", "*.obj", "*.exe", "*.jar", "*.class",
    "*.mp4", "*.mov", "*.mkv", "*.webm", "*.iso",
    "*.zip", "*.tar", "*.tar.gz", "*.tgz", "*.7z", "*.rar",
    ".env", ".env.*",
    ".DS_Store", "Thumbs.db",
    "*.log",
]

_HASH_RE = re.compile(r"^[0-9a-fA-F]{4,64}$")
_MIB = 1024 * 1024
_PROJECT_MARKERS = (
    ".git", ".hg", "pyproject.toml", "package.json", "Cargo.toml", "go.mod",
    "Makefile", "pom.xml", "Gemfile",
)


def _base() -> Path:
    return Path(CHECKPOINT_BASE)


def _store_dir() -> Path:
    return _base() / STORE_DIRNAME


def _norm(path: str) -> Path:
    return Path(path).expanduser().resolve()


def _check_hash(h: str) -> Optional[str]:
    """Why a checkpoint reference is refused (None: it is fine).  Only hex
    ids and prefixes: never anything that looks like an option."""
    if not h or not h.strip():
        return "Empty commit hash"
    if h.startswith("-"):
        return "Invalid commit hash (must not start with '-'): %r" % h
    if not _HASH_RE.match(h):
        return "Invalid commit hash (expected 4-64 hex characters): %r" % h
    return None


def _check_rel(file_path: str, root: Path) -> Optional[str]:
    if not file_path or not file_path.strip():
        return "Empty file path"
    if os.path.isabs(file_path):
        return "File path must be relative, got absolute path: %r" % file_path
    try:
        (root / file_path).resolve().relative_to(root)
    except ValueError:
        return "File path escapes the working directory via traversal: %r" % file_path
    return None


def _iso_local(ns: int) -> str:
    t = datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.timezone.utc)
    return t.astimezone().isoformat(timespec="seconds")


def _tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def _stat_text(files) -> str:
    """A ``--stat``-style summary of a decree diff."""
    if not files:
        return ""
    width = max(len(f.path) for f in files)
    lines = []
    ins = dels = 0
    for f in files:
        ins += f.added
        dels += f.removed
        if f.binary or f.skipped:
            lines.append(" %-*s | Bin" % (width, f.path))
        else:
            n = f.added + f.removed
            bar = "+" * min(f.added, 40) + "-" * min(f.removed, 40)
            lines.append(" %-*s | %d %s" % (width, f.path, n, bar))
    s = " %d file%s changed" % (len(files), "" if len(files) == 1 else "s")
    if ins:
        s += ", %d insertion%s(+)" % (ins, "" if ins == 1 else "s")
    if dels:
        s += ", %d deletion%s(-)" % (dels, "" if dels == 1 else "s")
    lines.append(s)
    return "\n".join(lines)


class CheckpointManager:
    """Automatic checkpoints of working directories, one per turn.

    Call :meth:`new_turn` at the start of each agent turn and
    :meth:`ensure_checkpoint` before any tool that changes files; at most
    one checkpoint is taken per directory per turn, and none when nothing
    changed since the last one.

    :param enabled: master switch; a disabled manager does nothing.
    :param max_snapshots: checkpoints kept per directory (at least 1).
    :param max_total_size_mb: ceiling of the whole store; the oldest
        checkpoints of the directory go until it fits (0: none).
    :param max_file_size_mb: files larger than this are left out of
        checkpoints (0: no limit).
    """

    def __init__(
        self,
        enabled: bool = False,
        max_snapshots: int = 20,
        max_total_size_mb: int = 500,
        max_file_size_mb: int = 10,
    ) -> None:
        self.enabled = enabled
        self.max_snapshots = max(1, int(max_snapshots))
        self.max_total_size_mb = max(0, int(max_total_size_mb))
        self.max_file_size_mb = max(0, int(max_file_size_mb))
        self._checkpointed_dirs: Set[str] = set()
        self._stores: Dict[tuple, Store] = {}
        self._lock = threading.RLock()

    # -- turns

    def new_turn(self) -> None:
        """Forget which directories this turn checkpointed."""
        self._checkpointed_dirs.clear()

    # -- the store

    def _max_file_size(self) -> int:
        # decree skips files *above* the limit, as Hermes does
        return self.max_file_size_mb * _MIB if self.max_file_size_mb else 1 << 62

    def _store(self, root: str, missing_root: bool = False) -> Store:
        key = (str(_store_dir()), root, self._max_file_size())
        s = self._stores.get(key)
        if s is None or not s._h:
            s = Store(
                root,
                key[0],
                excludes=DEFAULT_EXCLUDES,
                # no limit on the handle: the journal must record a big
                # file the agent wrote; each checkpoint keeps its limit
                max_file_size=1 << 62,
                use_config=False,
                missing_root=missing_root,
            )
            self._stores[key] = s
        return s

    def _forget(self, root: str) -> None:
        for k in [k for k in self._stores if k[1] == root]:
            self._stores.pop(k).close()

    def close(self) -> None:
        """Close the store handles (they reopen when needed)."""
        with self._lock:
            for s in self._stores.values():
                s.close()
            self._stores.clear()

    def __enter__(self) -> "CheckpointManager":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- taking checkpoints

    def ensure_checkpoint(self, working_dir: str, reason: str = "auto") -> bool:
        """Checkpoint ``working_dir`` unless disabled, already done this
        turn, too broad (``/`` or the home directory) or unchanged.
        Returns True when a checkpoint was taken; never raises."""
        if not self.enabled:
            return False
        try:
            abs_dir = str(_norm(working_dir))
        except (OSError, RuntimeError):
            return False
        if abs_dir in ("/", str(Path.home())):
            logger.debug("checkpoint skipped: %s is too broad", abs_dir)
            return False
        if abs_dir in self._checkpointed_dirs:
            return False
        self._checkpointed_dirs.add(abs_dir)
        try:
            with self._lock:
                return self._take(abs_dir, reason)
        except Exception as e:  # a checkpoint never breaks the agent
            logger.debug("checkpoint of %s failed: %s", abs_dir, e)
            self._forget(abs_dir)
            return False

    def _take(self, abs_dir: str, reason: str, prune: bool = True) -> bool:
        if not os.path.isdir(abs_dir):
            return False
        s = self._store(abs_dir)
        msg = "hermes-%d" % time.time_ns()
        c = s.create(
            SESSION,
            message=msg,
            label=reason,
            if_changed=True,
            excludes=DEFAULT_EXCLUDES,
            max_file_size=self._max_file_size(),
        )
        if not c.created:
            return False
        if c.files_changed == 0:
            # the first checkpoint of an empty tree: nothing to keep
            s.delete(c.id)
            return False
        # the turn of the agent journal that record_agent_write appends to
        # (same session and message: the checkpoint above is reused)
        s.agent_turn(SESSION, agent="hermes", message=msg, prompt=reason)
        if prune:
            self._prune(s)
        return True

    def _prune(self, s: Store) -> None:
        try:
            mine = [c for c in s.list(SESSION)]
            if len(mine) > self.max_snapshots:
                s.prune(SESSION, keep=self.max_snapshots)
                s.gc()
            cap = self.max_total_size_mb * _MIB
            if cap <= 0:
                return
            store_path = Path(s.path)
            mine = s.list(SESSION)
            while _tree_bytes(store_path) > cap and len(mine) > 1:
                s.delete(mine[0].id)
                s.gc()
                mine = mine[1:]
        except DecreeError as e:
            logger.warning("checkpoint pruning stopped: %s", e)

    # -- reading

    def list_checkpoints(self, working_dir: str) -> List[Dict]:
        """The checkpoints of a directory, newest first (at most
        ``max_snapshots``): dicts with ``hash``, ``short_hash``,
        ``timestamp`` (ISO 8601, local offset), ``reason``,
        ``files_changed``, ``insertions``, ``deletions`` (against the
        previous checkpoint)."""
        abs_dir = str(_norm(working_dir))
        if not _store_dir().is_dir():
            return []
        try:
            with self._lock:
                cps = self._store(abs_dir, missing_root=True).list(SESSION)
        except DecreeError:
            return []
        out = []
        for c in reversed(cps[-self.max_snapshots:]):
            out.append(
                {
                    "hash": c.id,
                    "short_hash": c.id[:8],
                    "timestamp": _iso_local(c.created_ns),
                    "reason": c.label or c.message or "",
                    "files_changed": max(0, c.files_changed),
                    "insertions": max(0, c.insertions),
                    "deletions": max(0, c.deletions),
                }
            )
        return out

    def list_all_checkpoints(self) -> List[Dict]:
        """Checkpoints of every project of the store, newest first; each
        dict also has ``workdir``."""
        roots = self._known_roots()
        out: List[Dict] = []
        for r in roots:
            for e in self.list_checkpoints(r):
                e["workdir"] = r
                out.append(e)
        out.sort(key=lambda e: e["timestamp"], reverse=True)
        return out

    def _known_roots(self) -> List[str]:
        if not _store_dir().is_dir():
            return []
        try:
            with self._lock:
                s = Store(str(_base()), str(_store_dir()), use_config=False, missing_root=True)
                try:
                    return [p.root for p in s.projects() if p.root and p.checkpoints]
                finally:
                    s.close()
        except DecreeError:
            return []

    def diff(self, working_dir: str, commit_hash: str) -> Dict:
        """The changes from a checkpoint to the working tree:
        ``{"success", "stat", "diff"}`` or ``{"success": False,
        "error"}``."""
        err = _check_hash(commit_hash)
        if err:
            return {"success": False, "error": err}
        abs_dir = str(_norm(working_dir))
        if not _store_dir().is_dir():
            return {"success": False, "error": "No checkpoints exist for this directory"}
        try:
            with self._lock:
                s = self._store(abs_dir)
                try:
                    ref = s.resolve(commit_hash)
                except DecreeError:
                    return {"success": False, "error": "Checkpoint '%s' not found" % commit_hash}
                d = s.diff(ref)
        except DecreeError as e:
            return {"success": False, "error": str(e)}
        return {"success": True, "stat": _stat_text(d.files), "diff": d.text}

    def session_diff(self, working_dir: str) -> Dict:
        """Everything changed since the oldest checkpoint kept."""
        cps = self.list_checkpoints(working_dir)
        if not cps:
            return {"success": True, "stat": "", "diff": "", "empty": True}
        base = cps[-1]["hash"]
        r = self.diff(working_dir, base)
        if r.get("success"):
            r.setdefault("baseline", base)
            if not r.get("stat") and not r.get("diff"):
                r["empty"] = True
        return r

    # -- restoring

    def restore(
        self,
        working_dir: str,
        commit_hash: str,
        file_path: Optional[str] = None,
        safe: bool = False,
    ) -> Dict:
        """Put a directory (or one file) back as a checkpoint has it.

        ``safe`` (whole-directory restores only): revert only what the
        agent wrote (:meth:`record_agent_write`); a file the user changed
        after the agent's last write, or that the agent never wrote, is
        left and listed in ``skipped_user_edits``.  Without any recorded
        agent write it is a full restore.  Returns ``{"success",
        "restored_to", "reason", "directory"}`` (+ ``file``; safe:
        ``restored_files``, ``skipped_user_edits``, ``skipped_oversize``)
        or ``{"success": False, "error"}``."""
        err = _check_hash(commit_hash)
        if err:
            return {"success": False, "error": err}
        root = _norm(working_dir)
        abs_dir = str(root)
        if file_path:
            err = _check_rel(file_path, root)
            if err:
                return {"success": False, "error": err}
        if not _store_dir().is_dir():
            return {"success": False, "error": "No checkpoints exist for this directory"}
        try:
            with self._lock:
                return self._restore(abs_dir, commit_hash, file_path, safe)
        except DecreeError as e:
            self._forget(abs_dir)
            return {"success": False, "error": "Restore failed: %s" % e}

    def _restore(self, abs_dir: str, commit_hash: str, file_path: Optional[str], safe: bool) -> Dict:
        s = self._store(abs_dir)
        try:
            ref = s.resolve(commit_hash)
        except DecreeError as e:
            return {"success": False, "error": "Checkpoint '%s' not found" % commit_hash, "debug": str(e)}
        # its metadata from the listing (show would read its file list)
        target = next(c for c in s.list() if c.id == ref)
        result = {
            "success": True,
            "restored_to": commit_hash[:8],
            "reason": target.label or target.message or "",
            "directory": abs_dir,
        }
        if safe and not file_path and self._has_agent_writes(s):
            changed = {c.path for c in s.compare(ref)}
            r = s.restore(ref, agent_only=True)
            restored = [p.path for p in r.plan if p.action != "skip-user-edit"]
            # Two kinds of path decree's agent-only restore leaves that a
            # Hermes safe restore puts back: a file the agent wrote that is
            # gone now (what it last held was the agent's), and one the
            # agent wrote past max_file_size (the checkpoint holds its
            # earlier bytes; the size rule hides it from the comparison).
            # The second is reverted even if the user edited it after the
            # agent: decree's journal cannot tell for a file it skips.
            skipped = [p.path for p in r.plan if p.action == "skip-user-edit"]
            extra = [p for p in skipped if not os.path.lexists(os.path.join(abs_dir, p))]
            left = changed - set(restored) - set(extra)
            grown = [p for p in sorted(left) if self._oversize(os.path.join(abs_dir, p))]
            if grown:
                written = self._agent_paths_since(s, target)
                stored = {f.path for f in s.show(ref).files if f.sha256}
                extra += [p for p in grown if p in written and p in stored]
            if extra:
                r2 = s.restore(ref, extra)
                restored = sorted(set(restored) | {p.path for p in r2.plan})
            kept = sorted(changed - set(restored))
            oversize = [p for p in kept if self._oversize(os.path.join(abs_dir, p))]
            result["restored_files"] = restored
            result["skipped_user_edits"] = [p for p in kept if p not in oversize]
            result["skipped_oversize"] = oversize
            if not restored:
                result["reason"] = "nothing to restore (all changed files were user-edited)"
        elif file_path:
            s.restore(ref, [os.path.normpath(file_path)])
            result["file"] = file_path
        else:
            s.restore(ref)
        self._prune(s)
        return result

    def _oversize(self, path: str) -> bool:
        cap = self.max_file_size_mb * _MIB
        try:
            return cap > 0 and os.lstat(path).st_size > cap
        except OSError:
            return False

    @staticmethod
    def _agent_paths_since(s: Store, target) -> Set[str]:
        out: Set[str] = set()
        for t in s.rewind_list(SESSION).turns:
            if t.checkpoint == target.id or t.created_ns >= target.created_ns:
                out.update(t.files)
        return out

    @staticmethod
    def _has_agent_writes(s: Store) -> bool:
        try:
            return any(t.files for t in s.rewind_list(SESSION).turns)
        except NotFoundError:
            return False

    # -- the agent-write journal

    def record_agent_write(self, file_path: str) -> None:
        """Note that the agent just wrote ``file_path`` (what it holds now
        is journaled), so that a safe restore can tell the agent's edits
        from the user's.  Never raises."""
        if not self.enabled:
            return
        try:
            path = _norm(file_path)
            if not path.is_file():
                return
            root = self.get_working_dir_for_path(str(path))
            rel = os.path.relpath(str(path), root)
            with self._lock:
                self._store(root).agent_record_paths(SESSION, [rel], tool="write_file")
        except Exception as e:
            logger.debug("record_agent_write(%s) failed: %s", file_path, e)

    def get_working_dir_for_path(self, file_path: str) -> str:
        """The working directory a file belongs to: the deepest directory
        with checkpoints that holds it, else the nearest ancestor with a
        project marker (.git, pyproject.toml, package.json, ...) below the
        home directory, else the file's directory."""
        path = _norm(file_path)
        cand = path if path.is_dir() else path.parent
        owners = []
        for r in self._known_roots():
            rp = Path(r)
            if cand == rp or rp in cand.parents:
                owners.append(rp)
        if owners:
            return str(max(owners, key=lambda p: len(p.parts)))
        home = Path.home().resolve()
        stop = {home, *home.parents}
        d = cand
        while d != d.parent and d not in stop:
            if any((d / m).exists() for m in _PROJECT_MARKERS):
                return str(d)
            d = d.parent
        return str(cand)


def format_checkpoint_list(checkpoints: List[Dict], directory: str) -> str:
    """The checkpoints as a numbered list for a person."""
    if not checkpoints:
        return "No checkpoints found for %s" % directory
    lines = ["Checkpoints for %s:" % directory, ""]
    for i, c in enumerate(checkpoints, 1):
        when = c["timestamp"][:16].replace("T", " ")
        stat = ""
        if c.get("files_changed"):
            n = c["files_changed"]
            stat = "  (%d file%s, +%d/-%d)" % (n, "" if n == 1 else "s", c.get("insertions", 0), c.get("deletions", 0))
        where = ""
        if c.get("workdir") and directory == "all directories":
            where = "  [%s]" % (Path(c["workdir"]).name or c["workdir"])
        lines.append("  %d. %s  %s%s  %s%s" % (i, c["short_hash"], when, where, c["reason"], stat))
    lines += [
        "",
        "  /rollback <N>             restore to checkpoint N",
        "  /rollback diff <N>        preview changes since checkpoint N",
        "  /rollback <N> <file>      restore a single file from checkpoint N",
    ]
    return "\n".join(lines)
