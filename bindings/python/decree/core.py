"""The Python face of libdecree: Store and the result objects.

A :class:`Store` is one ``decree_store`` handle: one store directory bound
to one project root.  Its methods are the library's calls, one each; they
raise a :class:`decree.errors.DecreeError` subclass on failure and return
plain objects (dataclasses) that own copies of everything, so nothing
refers to library memory after a call returns.

Threads: like the C handle, a Store is used by one thread at a time (the
library's error slot is per thread, and each call reads it on the thread
that made the call).  ctypes releases the GIL during every call, so other
Python threads run while a checkpoint is hashing.
"""

from __future__ import annotations

import ctypes
import os
import struct
import warnings
from ctypes import byref, c_bool, c_int, c_size_t, c_void_p
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Union

from . import _lib
from ._lib import lib
from .errors import DecreeWarning, error_for

PathLike = Union[str, bytes, "os.PathLike[str]"]

__all__ = [
    "Store",
    "Checkpoint",
    "Created",
    "FileEntry",
    "Snapshot",
    "Change",
    "DiffFile",
    "Diff",
    "PlanEntry",
    "RestoreResult",
    "ApplyReport",
    "ApplyResult",
    "RecoverResult",
    "GcStats",
    "FsckProblem",
    "FsckResult",
    "Notice",
    "DamagedRecord",
    "ProjectInfo",
    "Turn",
    "AgentSession",
    "TurnInfo",
    "RewindList",
    "ProgressInfo",
    "WorkspaceCopy",
    "Workspace",
    "WorkspaceConflicts",
    "Cancel",
    "version",
    "find_root",
]


def _enc(s: Optional[PathLike]) -> Optional[bytes]:
    return None if s is None else os.fsencode(s)


def _dec(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else os.fsdecode(b)


def _raise(rc: int) -> None:
    msg = lib.decree_error_last() or b""
    raise error_for(rc, msg.decode("utf-8", "replace") or "decree error %d" % rc)


def version() -> str:
    """The loaded library's version (``decree_version()``)."""
    return lib.decree_version().decode()


def find_root(start: PathLike = ".") -> str:
    """The project root for a directory: its nearest ancestor holding
    ``.decree/``, else the directory itself (``decree_project_find_root``)."""
    buf = ctypes.create_string_buffer(4096)
    rc = lib.decree_project_find_root(buf, len(buf), os.fsencode(start))
    if rc < 0:
        _raise(rc)
    return os.fsdecode(buf.value)


# ----------------------------------------------------------------- results

# decree_checkpoint_info as one struct.unpack format, checked against the
# ctypes layout at import (a mismatch falls back to field reads)
_CI_STRUCT = struct.Struct("@65sPPPq40sQQQ?65sqqq")
_CI_SIZE = ctypes.sizeof(_lib.CheckpointInfo)
_CI_FAST = _CI_STRUCT.size == _CI_SIZE and all(
    _CI_STRUCT.size and getattr(_lib.CheckpointInfo, f).offset == o
    for f, o in (("session", 72), ("created_ns", 96), ("tree", 169), ("deletions", 256))
)
_CAPTURE_LABELS = frozenset(("pre-restore", "pre-undo", "pre-redo", "exec-failed"))


def _enum_name(fn, value: int) -> str:
    """The name the library gives an enum value (decree_*_name: the same
    table as --json and the Node binding; "other" for an unknown value)."""
    return fn(value).decode()


@dataclass
class Checkpoint:
    """One checkpoint record (``decree_checkpoint_info``)."""

    id: str
    session: Optional[str]
    message: Optional[str]
    label: Optional[str]
    created_ns: int
    created_at: str  #: RFC 3339 UTC
    file_count: int
    total_bytes: int
    skipped_count: int
    has_changes: bool  #: only computed by ``list(has_changes=True)``
    tree: str
    files_changed: int  #: vs the previous checkpoint of the session; -1: unknown
    insertions: int
    deletions: int
    is_capture: bool  #: made by decree itself (pre-restore, pre-undo, ...)

    @classmethod
    def _from(cls, ci: "_lib.CheckpointInfo", is_capture: bool) -> "Checkpoint":
        s, m, lab = ci.session, ci.message, ci.label
        return cls(
            ci.id.decode(),
            s.decode("utf-8", "replace") if s is not None else None,
            m.decode("utf-8", "replace") if m is not None else None,
            lab.decode("utf-8", "replace") if lab is not None else None,
            ci.created_ns,
            ci.created_at.decode(),
            ci.file_count,
            ci.total_bytes,
            ci.skipped_count,
            ci.has_changes,
            ci.tree.decode(),
            ci.files_changed,
            ci.insertions,
            ci.deletions,
            is_capture,
        )


@dataclass
class Created:
    """What :meth:`Store.create` made or found."""

    id: str
    tree: str
    created: bool  #: False: an existing checkpoint was returned
    files_changed: int
    insertions: int
    deletions: int
    notices: List["Notice"] = field(default_factory=list)


@dataclass
class FileEntry:
    """One file of a checkpoint (``decree_file_info``)."""

    path: str
    sha256: str  #: "" for a skipped file
    size: int
    mode: int  #: 0o644, 0o600, ..., 0o120000 for a symlink, 0 skipped
    skip_reason: Optional[str]


@dataclass
class Snapshot:
    """:meth:`Store.show`: a checkpoint and its files."""

    checkpoint: Checkpoint
    files: List[FileEntry]


@dataclass
class Change:
    """One path of :meth:`Store.compare`: status 'A', 'D' or 'M'."""

    path: str
    status: str


@dataclass
class DiffFile:
    """One changed path of a diff (``decree_diff_file``)."""

    path: str
    status: str  #: 'A', 'D', 'M' (patch_files: also 'R', 'C')
    old_mode: int
    new_mode: int
    binary: bool
    skipped: bool
    added: int
    removed: int
    text: Optional[str]  #: the diff record(s); None with no_text/skipped


@dataclass
class Diff:
    """:meth:`Store.diff`: the changed files, in canonical path order."""

    files: List[DiffFile]

    @property
    def text(self) -> str:
        """The whole unified diff (docs/diff-format.md)."""
        return "".join(f.text or "" for f in self.files)

    @property
    def insertions(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(f.removed for f in self.files)

    def __iter__(self) -> Iterator[DiffFile]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


@dataclass
class PlanEntry:
    """One path a restore, undo, redo or rewind writes (or, with
    agent_only, leaves as the user edited it: ``skip-user-edit``)."""

    path: str
    action: str  #: create, restore, delete, replace, skip-user-edit


@dataclass
class RestoreResult:
    """A restore, undo, redo or rewind (``decree_restore_result``)."""

    created: int
    restored: int
    deleted: int
    skipped_user_edits: int
    pre_checkpoint: str  #: the capture of the tree before ("" if none)
    plan: List[PlanEntry]
    notices: List["Notice"] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return self.created + self.restored + self.deleted


@dataclass
class ApplyReport:
    path: str
    action: str  #: create, modify, delete, skip, conflict
    detail: Optional[str]


@dataclass
class ApplyResult:
    """:meth:`Store.apply` (``decree_apply_result``)."""

    created: int
    modified: int
    deleted: int
    skipped: int
    conflicts: int
    exec_ran: bool
    exec_status: int
    restored: int
    removed: int
    swept: int
    exec_checkpoint: str
    report: List[ApplyReport]


@dataclass
class RecoverResult:
    recovered: bool
    left_alone: int


@dataclass
class GcStats:
    objects_freed: int
    bytes_freed: int
    objects_kept: int


@dataclass
class FsckProblem:
    kind: str  #: damaged, unfinished, repaired, lost, unrepaired
    what: str
    detail: str


@dataclass
class FsckResult:
    clean: bool  #: no problem found (or remains after a repair)
    problems: List[FsckProblem]


@dataclass
class Notice:
    """Something a call did that the user would not expect
    (``decree_notice``)."""

    kind: str  #: mostly_ignored, existing, too_large, edits_saved, workspace
    message: str
    count: int
    files: int
    path: Optional[str]
    size: int
    limit: int
    rule_source: Optional[str]
    rule: Optional[str]
    rule_count: int
    checkpoint: str
    created_at: str
    session: Optional[str]
    msg: Optional[str]
    label: Optional[str]
    paths: List[str]


@dataclass
class DamagedRecord:
    id: str
    problem: str
    damaged: bool
    removed: bool


@dataclass
class ProjectInfo:
    """One project root a store serves (``decree_projects_info``)."""

    root: str
    key: str
    exists: bool
    is_current: bool
    checkpoints: int
    damaged: int
    history: int
    bytes: int
    last_ns: int
    last_at: str
    #: the workspace's name when the root is one of this store's workspaces
    workspace: Optional[str] = None


@dataclass
class Turn:
    """:meth:`Store.agent_turn`."""

    turn: int
    checkpoint: str
    started: bool


@dataclass
class AgentSession:
    session: str
    agent: Optional[str]
    turns: int
    last_ns: int
    last_at: str


@dataclass
class TurnInfo:
    turn: int
    message: Optional[str]
    prompt: Optional[str]
    checkpoint: str
    checkpoint_exists: bool
    created_ns: int
    created_at: str
    files: List[str]  #: paths the agent changed in this turn


@dataclass
class RewindList:
    session: str
    agent: Optional[str]
    turns: List[TurnInfo]
    damaged: int  #: journal records that could not be read


@dataclass
class ProgressInfo:
    stage: str  #: scan, check, write, verify
    files: int
    files_total: int
    bytes: int
    bytes_total: int
    total_known: bool


@dataclass
class WorkspaceCopy:
    """How a workspace's files were made (``decree_workspace_copy``)."""

    cloned: int  #: reflink clones of the project's files
    copied: int  #: byte copies of the project's files
    from_store: int  #: written from the store (differed from the base, or gone)
    links: int  #: symlinks
    dirs: int  #: directories
    bytes: int  #: of the regular files


@dataclass
class Workspace:
    """One workspace of the project (``decree_workspace_info``):
    docs/workspaces.md."""

    name: str
    path: str  #: the absolute directory of the workspace
    project: str  #: the project root it was made from
    base: str  #: the base checkpoint (in the project)
    base_tree: str  #: its tree id
    created_ns: int  #: Unix time, nanoseconds
    mode: str  #: "reflink", "copy" or "mixed"
    reflink_verified: bool  #: a clone was checked to share extents
    copy: WorkspaceCopy

    @classmethod
    def _from(cls, w: "_lib.WorkspaceInfo") -> "Workspace":
        c = w.copy
        return cls(
            _dec(w.name) or "",
            _dec(w.path) or "",
            _dec(w.project) or "",
            w.base.decode(),
            w.base_tree.decode(),
            w.created_ns,
            w.mode.decode(),
            w.reflink_verified,
            WorkspaceCopy(c.cloned, c.copied, c.from_store, c.links, c.dirs, c.bytes),
        )


@dataclass
class WorkspaceConflicts:
    """:meth:`Store.workspace_conflicts`: what an apply would find."""

    clean: bool  #: no conflict: an apply now would go through
    files: int  #: paths the apply would report (all actions)
    changes: int  #: paths it would create, modify or delete
    conflicts: List[ApplyReport]  #: action "conflict"; detail "'PATH': reason"
    report: List[ApplyReport]  #: every path, as :meth:`Store.workspace_apply` reports it

    def __bool__(self) -> bool:  # truthy when there are conflicts
        return not self.clean


class Cancel:
    """A cancel flag for restore, undo, redo, rewind and apply: call
    :meth:`set` from another thread (or a signal handler) and the running
    call rolls back and raises :class:`decree.CancelledError`."""

    def __init__(self) -> None:
        self._flag = c_int(0)

    def set(self) -> None:
        self._flag.value = 1

    def clear(self) -> None:
        self._flag.value = 0

    @property
    def is_set(self) -> bool:
        return bool(self._flag.value)


# ----------------------------------------------------------------- Store


class Store:
    """A decree store bound to a project root (``decree_store``).

    :param root: the project directory.
    :param store: the store directory (default: ``<root>/.decree/store``,
        or the ``store:`` of ``.decree/config.yml`` when ``use_config``).
    :param max_file_size: files above this many bytes are only recorded as
        skipped (0: 50 MiB or the config's limit).
    :param excludes: extra gitignore patterns for every scan.
    :param lock_timeout_ms: how long a mutating call waits for the store
        lock (<0: 30 s; 0: do not wait).
    :param threads: hashing threads (0: all cores).
    :param missing_root: accept a root that no longer exists when the store
        has checkpoints for it (list, drop, prune, gc, fsck work).
    :param use_config: read ``<root>/.decree/config.yml`` for the store
        location, size limit and excludes, as the program does.

    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        root: PathLike,
        store: Optional[PathLike] = None,
        *,
        max_file_size: int = 0,
        excludes: Optional[Sequence[str]] = None,
        lock_timeout_ms: int = -1,
        threads: int = 0,
        missing_root: bool = False,
        use_config: bool = True,
    ) -> None:
        self._h = c_void_p()
        self.last_warning: str = ""
        self._progress_fn = None
        o = _lib.StoreOptions()
        o.version = _lib.StoreOptions.VERSION
        root_b = os.fsencode(root)
        cfg = None
        keep = []
        if use_config and os.path.isdir(os.path.join(root_b, b".decree")):
            cfg = ctypes.POINTER(_lib.Config)()
            rc = lib.decree_config_load(byref(cfg), root_b)
            if rc < 0:
                _raise(rc)
        try:
            if cfg:
                c = cfg.contents
                o.store_path = c.store
                o.max_file_size = c.max_file_size
                cfg_ex = []
                i = 0
                while c.excludes and c.excludes[i] is not None:
                    cfg_ex.append(c.excludes[i])
                    i += 1
                if excludes:
                    cfg_ex += [os.fsencode(x) for x in excludes]
                excludes = cfg_ex or None
            o.root = root_b
            if store is not None:
                o.store_path = os.fsencode(store)
            if max_file_size:
                o.max_file_size = max_file_size
            arr = _lib.cstrings(excludes)
            keep.append(arr)
            o.excludes = ctypes.cast(arr, _lib.c_char_pp) if arr is not None else None
            o.lock_timeout_ms = lock_timeout_ms
            o.threads = threads
            o.flags = _lib.STORE_MISSING_ROOT if missing_root else 0
            rc = lib.decree_store_open(byref(self._h), byref(o))
            if rc < 0:
                self._h = c_void_p()
                _raise(rc)
        finally:
            if cfg:
                lib.decree_config_free(cfg)

    # -- lifecycle

    def close(self) -> None:
        """Free the handle (idempotent)."""
        if self._h:
            lib.decree_store_free(self._h)
            self._h = c_void_p()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _handle(self) -> c_void_p:
        if not self._h:
            raise ValueError("decree: the store is closed")
        return self._h

    def _check_warning(self) -> None:
        w = lib.decree_warning_last()
        if w:
            self.last_warning = w.decode("utf-8", "replace")
            warnings.warn(self.last_warning, DecreeWarning, stacklevel=3)

    def _mutating(self) -> None:
        lib.decree_warning_clear()
        self.last_warning = ""

    @property
    def root(self) -> str:
        """The absolute project root."""
        return os.fsdecode(lib.decree_store_root(self._handle()))

    @property
    def path(self) -> str:
        """The absolute store directory."""
        return os.fsdecode(lib.decree_store_path(self._handle()))

    @property
    def root_exists(self) -> bool:
        return bool(lib.decree_store_root_exists(self._handle()))

    def __repr__(self) -> str:
        if not self._h:
            return "<decree.Store closed>"
        return "<decree.Store root=%r store=%r>" % (self.root, self.path)

    def set_progress(self, fn: Optional[Callable[[ProgressInfo], None]]) -> None:
        """Report how far every later long call is (``None``: off).  ``fn``
        runs on the calling thread, as often as once per file: keep it
        cheap; it must not call back into this store."""
        h = self._handle()
        if fn is None:
            self._progress_fn = None
            lib.decree_store_set_progress(h, _lib.PROGRESS_FN(), None)
            return

        def tramp(_payload, p):
            q = p.contents
            try:
                fn(
                    ProgressInfo(
                        _enum_name(lib.decree_progress_stage_name, q.stage),
                        q.files,
                        q.files_total,
                        q.bytes,
                        q.bytes_total,
                        q.total_known,
                    )
                )
            except Exception:  # a progress display never breaks the call
                pass

        self._progress_fn = _lib.PROGRESS_FN(tramp)
        lib.decree_store_set_progress(h, self._progress_fn, None)

    # -- checkpoints

    def create(
        self,
        session: Optional[str] = None,
        message: Optional[str] = None,
        label: Optional[str] = None,
        *,
        if_changed: bool = False,
        excludes: Optional[Sequence[str]] = None,
        max_file_size: int = 0,
    ) -> Created:
        """Checkpoint the working tree (``decree_checkpoint_create_ext``).

        With a ``message`` the session already has, or with ``if_changed``
        and a tree equal to the session's latest, nothing is created and
        that checkpoint is returned (``created`` False).  ``excludes`` and
        ``max_file_size`` are kept in the checkpoint: every later restore,
        diff or compare of it honours them."""
        h = self._handle()
        o = _lib.CreateOptions()
        o.version = _lib.CreateOptions.VERSION
        o.session = _enc(session)
        o.message = _enc(message)
        o.label = _enc(label)
        o.if_changed = if_changed
        arr = _lib.cstrings(excludes)
        if arr is not None:
            o.excludes = ctypes.cast(arr, _lib.c_char_pp)
        o.max_file_size = max_file_size
        out = _lib.Created()
        self._mutating()
        rc = lib.decree_checkpoint_create_ext(byref(out), h, byref(o))
        if rc < 0:
            _raise(rc)
        self._check_warning()
        return Created(
            out.id.decode(),
            out.tree.decode(),
            out.created,
            out.files_changed,
            out.insertions,
            out.deletions,
            self._notices(),
        )

    def list(self, session: Optional[str] = None, *, has_changes: bool = False) -> List[Checkpoint]:
        """The checkpoints of this root, oldest first (``session`` None: all
        sessions).  ``has_changes`` scans the tree to say, for each, whether
        the next checkpoint (the last: the working tree) differs."""
        h = self._handle()
        lst = c_void_p()
        rc = lib.decree_checkpoint_list_get(
            byref(lst), h, _enc(session), _lib.LIST_HAS_CHANGES if has_changes else 0
        )
        if rc < 0:
            _raise(rc)
        try:
            n = lib.decree_checkpoint_list_count(lst)
            if not n:
                return []
            if not _CI_FAST:
                at, cap = lib.decree_checkpoint_list_at, lib.decree_checkpoint_is_capture
                return [Checkpoint._from(at(lst, i).contents, cap(at(lst, i))) for i in range(n)]
            # The records are read with one unpack each (15 ctypes field
            # reads cost 3x the library's own listing of 100 checkpoints).
            # They lie at a fixed stride in the list (checked: the last
            # one is where the stride puts it; else one by one).
            at = lib.decree_checkpoint_list_at
            base = ctypes.cast(at(lst, 0), c_void_p).value
            stride = ctypes.cast(at(lst, 1), c_void_p).value - base if n > 1 else _CI_SIZE
            last = ctypes.cast(at(lst, n - 1), c_void_p).value
            if stride < _CI_SIZE or last != base + (n - 1) * stride:
                cap = lib.decree_checkpoint_is_capture
                return [Checkpoint._from(at(lst, i).contents, cap(at(lst, i))) for i in range(n)]
            raw = ctypes.string_at(base, (n - 1) * stride + _CI_SIZE)
            unpack = _CI_STRUCT.unpack_from
            sat = ctypes.string_at
            new = Checkpoint.__new__
            out = []
            for i in range(n):
                (cid, sp, mp, lp, cns, cat, fc, tb, sc, hc, tree, fch, ins, dele) = unpack(raw, i * stride)
                c = new(Checkpoint)
                c.id = cid[:64].decode()
                c.session = sat(sp).decode("utf-8", "replace") if sp else None
                c.message = sat(mp).decode("utf-8", "replace") if mp else None
                c.label = lab = sat(lp).decode("utf-8", "replace") if lp else None
                c.created_ns = cns
                c.created_at = cat.split(b"\0", 1)[0].decode()
                c.file_count, c.total_bytes, c.skipped_count = fc, tb, sc
                c.has_changes = hc
                c.tree = tree[:64].decode()
                c.files_changed, c.insertions, c.deletions = fch, ins, dele
                # decree_checkpoint_is_capture's rule (checkpoint.h): no
                # message and one of the capture labels
                c.is_capture = not mp and lab in _CAPTURE_LABELS
                out.append(c)
            return out
        finally:
            lib.decree_checkpoint_list_free(lst)

    def __iter__(self) -> Iterator[Checkpoint]:
        return iter(self.list())

    def resolve(self, ref: str) -> str:
        """The full id of a reference: an id, a unique prefix of >= 4 hex
        digits, or ``SESSION:MESSAGE``."""
        buf = ctypes.create_string_buffer(_lib.ID_LEN)
        rc = lib.decree_checkpoint_resolve(buf, self._handle(), _enc(ref))
        if rc < 0:
            _raise(rc)
        return buf.value.decode()

    def get(self, ref: str) -> Checkpoint:
        """One checkpoint's metadata (without its file list)."""
        return self.show(ref).checkpoint

    def show(self, ref: str) -> Snapshot:
        """A checkpoint and its files, skipped ones with their reason."""
        h = self._handle()
        snap = c_void_p()
        info = _lib.CheckpointInfo()
        rc = lib.decree_checkpoint_show(byref(snap), byref(info), h, _enc(ref))
        if rc < 0:
            _raise(rc)
        try:
            cp = Checkpoint._from(info, lib.decree_checkpoint_is_capture(byref(info)))
            files = []
            fi = _lib.FileInfo()
            for i in range(lib.decree_snapshot_count(snap)):
                lib.decree_snapshot_at(byref(fi), snap, i)
                files.append(
                    FileEntry(
                        os.fsdecode(fi.path),
                        fi.sha256.decode(),
                        fi.size,
                        fi.mode,
                        _dec(fi.skip_reason),
                    )
                )
            return Snapshot(cp, files)
        finally:
            lib.decree_snapshot_free(snap)

    def compare(self, ref: str, ref2: Optional[str] = None) -> List[Change]:
        """Per-path differences from checkpoint ``ref`` to ``ref2`` (None:
        the working tree): no contents are diffed."""
        out: List[Change] = []

        def cb(_p, path, status):
            out.append(Change(os.fsdecode(path), status.decode()))
            return 0

        rc = lib.decree_checkpoint_compare(
            self._handle(), _enc(ref), _enc(ref2), _lib.CHANGE_CB(cb), None
        )
        if rc < 0:
            _raise(rc)
        return out

    def prune(
        self,
        session: Optional[str] = None,
        *,
        keep: int = 0,
        older_than_days: int = -1,
    ) -> int:
        """Delete checkpoint records: keep the newest ``keep`` of each
        session and/or those younger than ``older_than_days``; never the
        newest of a session.  Returns how many were deleted."""
        n = c_size_t(0)
        self._mutating()
        rc = lib.decree_checkpoint_prune(
            byref(n), self._handle(), _enc(session), keep, older_than_days
        )
        if rc < 0:
            _raise(rc)
        self._check_warning()
        return n.value

    def drop(self, session: str) -> int:
        """Delete a session's records for this root and its agent journal;
        returns how many records.  :meth:`gc` then frees the storage."""
        if session is None:
            raise TypeError("drop(session): use drop_all() for every session")
        return self._drop(_enc(session))

    def drop_all(self) -> int:
        """Delete every record, the undo/redo history and every agent
        journal of this root (``decree checkpoint drop --all``)."""
        return self._drop(None)

    def _drop(self, session: Optional[bytes]) -> int:
        n = c_size_t(0)
        self._mutating()
        rc = lib.decree_checkpoint_drop(byref(n), self._handle(), session)
        if rc < 0:
            _raise(rc)
        self._check_warning()
        return n.value

    def delete(self, ref: str) -> None:
        """Delete one checkpoint record (the newest of a session too)."""
        self._mutating()
        rc = lib.decree_checkpoint_delete(self._handle(), _enc(ref))
        if rc < 0:
            _raise(rc)
        self._check_warning()

    # -- diff and apply

    def diff(
        self,
        ref: str,
        ref2: Optional[str] = None,
        *,
        context: int = 3,
        no_text: bool = False,
        paths: Optional[Sequence[PathLike]] = None,
    ) -> Diff:
        """The unified diff of checkpoint ``ref`` against ``ref2`` (None:
        the working tree), per file (docs/diff-format.md)."""
        o = _lib.DiffOptions()
        o.version = _lib.DiffOptions.VERSION
        o.context = context
        o.no_text = no_text
        arr = _lib.cstrings(paths)
        if arr is not None:
            o.paths = ctypes.cast(arr, _lib.c_char_pp)
        files: List[DiffFile] = []
        cb = _lib.DIFF_CB(lambda _p, f: _collect_diff(files, f))
        rc = lib.decree_checkpoint_diff(
            self._handle(), _enc(ref), _enc(ref2), byref(o), cb, None
        )
        if rc < 0:
            _raise(rc)
        return Diff(files)

    def apply(
        self,
        patch: Union[str, bytes],
        *,
        name: str = "<patch>",
        check: bool = False,
        reverse: bool = False,
        strip: int = -1,
        exec: Optional[str] = None,
        session: Optional[str] = None,
        cancel: Optional[Cancel] = None,
        on_progress: Optional[Callable[[str, Optional[str], Optional[str]], None]] = None,
    ) -> ApplyResult:
        """Apply a unified diff as one transaction (``decree_apply``).

        Every hunk is checked first; a conflict raises
        :class:`decree.ConflictError` and writes nothing (the per-path
        report is on the exception's ``report``).  ``check``: only check.
        ``exec``: a command run after the writes; if it fails the tree is
        put back and :class:`decree.ExecError` is raised (its ``result``
        says what was restored).  Undo with :meth:`undo`."""
        data = patch.encode() if isinstance(patch, str) else bytes(patch)
        h = self._handle()
        nm = _enc(name)
        return self._run_apply(
            lambda res, o: lib.decree_apply(res, h, nm, data, len(data), o),
            check, reverse, strip, exec, session, cancel, on_progress,
        )

    def _run_apply(self, call, check, reverse, strip, exec, session, cancel, on_progress) -> ApplyResult:
        """One apply-engine call (decree_apply, decree_workspace_apply):
        the options, the per-path report, the result or the exception
        carrying both."""
        report: List[ApplyReport] = []
        err: List[BaseException] = []

        def rep(_p, path, action, detail):
            report.append(
                ApplyReport(os.fsdecode(path), _enum_name(lib.decree_apply_action_name, action), _dec(detail))
            )

        o = _lib.ApplyOptions()
        o.version = _lib.ApplyOptions.VERSION
        o.check_only = check
        o.reverse = reverse
        o.strip = strip
        o.exec_ = _enc(exec)
        o.session = _enc(session)
        o.report = _lib.APPLY_REPORT_CB(rep)
        flag = cancel._flag if cancel else c_int(0)
        o.cancel = ctypes.pointer(flag)
        if on_progress:
            o.progress = _txn_progress(on_progress, flag, err)
        res = _lib.ApplyResult()
        self._mutating()
        rc = call(byref(res), byref(o))
        result = ApplyResult(
            res.created,
            res.modified,
            res.deleted,
            res.skipped,
            res.conflicts,
            res.exec_ran,
            res.exec_status,
            res.restored,
            res.removed,
            res.swept,
            res.exec_checkpoint.decode(),
            report,
        )
        if err:
            raise err[0]
        if rc < 0:
            msg = lib.decree_error_last() or b""
            e = error_for(rc, msg.decode("utf-8", "replace"))
            e.result = result  # type: ignore[attr-defined]
            e.report = report  # type: ignore[attr-defined]
            raise e
        self._check_warning()
        return result

    # -- restore, undo, redo

    def _restore_opts(self, paths, dry_run, agent_only, cancel, on_plan, on_progress, plan, err):
        o = _lib.RestoreOptions()
        o.version = _lib.RestoreOptions.VERSION
        arr = _lib.cstrings(paths)
        if arr is not None:
            o.paths = ctypes.cast(arr, _lib.c_char_pp)
        o.dry_run = dry_run
        o.agent_only = agent_only
        flag = cancel._flag if cancel else c_int(0)
        o.cancel = ctypes.pointer(flag)

        def pl(_p, path, action):
            e = PlanEntry(os.fsdecode(path), _enum_name(lib.decree_action_name, action))
            plan.append(e)
            if on_plan:
                try:
                    on_plan(e)
                except BaseException as ex:  # stop: roll back, re-raise
                    err.append(ex)
                    flag.value = 1

        o.plan = _lib.PLAN_CB(pl)
        if on_progress:
            o.progress = _txn_progress(on_progress, flag, err)
        return o, (arr, flag, o.plan, o.progress)

    def _run_restore(self, call, paths, dry_run, agent_only, cancel, on_plan, on_progress):
        plan: List[PlanEntry] = []
        err: List[BaseException] = []
        o, keep = self._restore_opts(paths, dry_run, agent_only, cancel, on_plan, on_progress, plan, err)
        res = _lib.RestoreResult()
        self._mutating()
        rc = call(byref(res), byref(o))
        del keep
        if err:
            raise err[0]
        if rc < 0:
            _raise(rc)
        self._check_warning()
        return RestoreResult(
            res.created,
            res.restored,
            res.deleted,
            res.skipped_user_edits,
            res.pre_checkpoint.decode(),
            plan,
            self._notices(),
        )

    def restore(
        self,
        ref: str,
        paths: Optional[Sequence[PathLike]] = None,
        *,
        dry_run: bool = False,
        agent_only: bool = False,
        cancel: Optional[Cancel] = None,
        on_plan: Optional[Callable[[PlanEntry], None]] = None,
        on_progress: Optional[Callable[[str, Optional[str], Optional[str]], None]] = None,
    ) -> RestoreResult:
        """Cascading restore: afterwards the scanned tree (or ``paths``)
        equals checkpoint ``ref``.  The present is captured first
        (``pre_checkpoint``) and :meth:`undo` brings it back.

        ``agent_only``: revert only paths the agent of the checkpoint's
        session changed (its journal), leaving paths the user edited after
        the agent's last write (``skip-user-edit`` in ``plan``).
        ``dry_run``: only the plan.  ``on_plan`` sees each path before
        anything is written (raising in it cancels the restore);
        ``on_progress(phase, path, action)`` each step."""
        h = self._handle()
        r = _enc(ref)
        return self._run_restore(
            lambda res, o: lib.decree_checkpoint_restore(res, h, r, o),
            paths, dry_run, agent_only, cancel, on_plan, on_progress,
        )

    def undo(
        self,
        *,
        dry_run: bool = False,
        cancel: Optional[Cancel] = None,
        on_plan: Optional[Callable[[PlanEntry], None]] = None,
        on_progress: Optional[Callable[[str, Optional[str], Optional[str]], None]] = None,
    ) -> RestoreResult:
        """Undo the last restore, apply or revert
        (:class:`decree.NotFoundError` when there is nothing to undo)."""
        h = self._handle()
        return self._run_restore(
            lambda res, o: lib.decree_undo(res, h, o),
            None, dry_run, False, cancel, on_plan, on_progress,
        )

    def redo(
        self,
        *,
        dry_run: bool = False,
        cancel: Optional[Cancel] = None,
        on_plan: Optional[Callable[[PlanEntry], None]] = None,
        on_progress: Optional[Callable[[str, Optional[str], Optional[str]], None]] = None,
    ) -> RestoreResult:
        """Redo the last undone operation."""
        h = self._handle()
        return self._run_restore(
            lambda res, o: lib.decree_redo(res, h, o),
            None, dry_run, False, cancel, on_plan, on_progress,
        )

    def drop_damaged_history(self) -> int:
        """Drop the damaged entries of the undo/redo history."""
        n = c_size_t(0)
        rc = lib.decree_history_drop_damaged(byref(n), self._handle())
        if rc < 0:
            _raise(rc)
        return n.value

    # -- maintenance

    def recover(self, *, rollback: bool = False) -> RecoverResult:
        """Finish or roll back an interrupted transaction; ``rollback``
        for a damaged log (:class:`decree.LogDamagedError`)."""
        o = _lib.RecoverOptions()
        o.version = _lib.RecoverOptions.VERSION
        o.rollback = rollback
        out = _lib.RecoverResult()
        self._mutating()
        rc = lib.decree_recover_ext(byref(out), self._handle(), byref(o))
        if rc < 0:
            _raise(rc)
        self._check_warning()
        return RecoverResult(out.recovered, out.left_alone)

    def gc(self, *, dry_run: bool = False) -> GcStats:
        """Delete every object nothing references (``dry_run``: count)."""
        out = _lib.GcStats()
        rc = lib.decree_gc(byref(out), self._handle(), dry_run)
        if rc < 0:
            _raise(rc)
        return GcStats(out.objects_freed, out.bytes_freed, out.objects_kept)

    def fsck(self, *, repair: bool = False) -> FsckResult:
        """Verify every object and record.  A damaged store is not an
        exception: ``clean`` is False and ``problems`` say what."""
        probs: List[FsckProblem] = []

        def cb(_p, kind, what, detail):
            probs.append(
                FsckProblem(
                    _enum_name(lib.decree_fsck_problem_name, kind),
                    _dec(what) or "",
                    (detail or b"").decode("utf-8", "replace"),
                )
            )

        o = _lib.FsckOptions()
        o.version = _lib.FsckOptions.VERSION
        o.flags = _lib.FSCK_REPAIR if repair else 0
        o.cb = _lib.FSCK_CB(cb)
        rc = lib.decree_fsck_ext(self._handle(), byref(o))
        if rc == -7:  # DECREE_ECORRUPT: problems found (reported above)
            return FsckResult(False, probs)
        if rc < 0:
            _raise(rc)
        return FsckResult(True, probs)

    def projects(self) -> List[ProjectInfo]:
        """Every project root this store serves, sorted by path."""
        lst = c_void_p()
        rc = lib.decree_projects_list(byref(lst), self._handle())
        if rc < 0:
            _raise(rc)
        try:
            out = []
            for i in range(lib.decree_projects_count(lst)):
                p = lib.decree_projects_at(lst, i).contents
                out.append(
                    ProjectInfo(
                        _dec(p.root) or "",
                        _dec(p.key) or "",
                        p.exists,
                        p.is_current,
                        p.checkpoints,
                        p.damaged,
                        p.history,
                        p.bytes,
                        p.last_ns,
                        _dec(p.last_at) or "",
                        _dec(p.workspace),
                    )
                )
            return out
        finally:
            lib.decree_projects_free(lst)

    def move_project(self, old_root: PathLike, new_root: PathLike) -> None:
        """Re-attach ``old_root``'s checkpoints to ``new_root``."""
        rc = lib.decree_projects_move(self._handle(), _enc(old_root), _enc(new_root))
        if rc < 0:
            _raise(rc)

    # -- what the last call noticed

    def _notices(self) -> List[Notice]:
        h = self._h
        out = []
        for i in range(lib.decree_notice_count(h)):
            n = lib.decree_notice_at(h, i).contents
            out.append(
                Notice(
                    _enum_name(lib.decree_notice_kind_name, n.kind),
                    (n.message or b"").decode("utf-8", "replace"),
                    n.count,
                    n.files,
                    _dec(n.path),
                    n.size,
                    n.limit,
                    _dec(n.rule_source),
                    _dec(n.rule),
                    n.rule_count,
                    n.checkpoint.decode(),
                    n.created_at.decode(),
                    _dec(n.session),
                    _dec(n.msg),
                    _dec(n.label),
                    [os.fsdecode(n.paths[k]) for k in range(n.npaths)],
                )
            )
        return out

    def notices(self) -> List[Notice]:
        """The notices of the last create, restore, undo, redo or rewind."""
        return self._notices()

    def damaged_records(self) -> List[DamagedRecord]:
        """Checkpoint records the last listing call skipped as unreadable."""
        h = self._handle()
        out = []
        for i in range(lib.decree_checkpoint_damaged_count(h)):
            d = lib.decree_checkpoint_damaged_at(h, i).contents
            out.append(
                DamagedRecord(
                    d.id.decode(), (d.problem or b"").decode("utf-8", "replace"), d.damaged, d.removed
                )
            )
        return out

    # -- agent sessions: turns, the agent-write journal, rewind

    def agent_turn(
        self,
        session: str,
        *,
        agent: Optional[str] = None,
        message: Optional[str] = None,
        prompt: Optional[str] = None,
        ensure: bool = False,
    ) -> Turn:
        """Start a turn of an agent session: checkpoint the tree and
        journal the turn (the same ``message`` again returns that turn;
        ``ensure`` joins the last turn when there is one)."""
        o = _lib.TurnOptions()
        o.version = _lib.TurnOptions.VERSION
        o.session = _enc(session)
        o.agent = _enc(agent)
        o.message = _enc(message)
        o.prompt = _enc(prompt)
        o.ensure = ensure
        out = _lib.TurnResult()
        self._mutating()
        rc = lib.decree_agent_turn(byref(out), self._handle(), byref(o))
        if rc < 0:
            _raise(rc)
        self._check_warning()
        return Turn(out.turn, out.checkpoint.decode(), out.started)

    def agent_tool_start(self, session: str, tool: Optional[str] = None, tool_id: Optional[str] = None) -> None:
        """Note that a tool whose writes are unknown is about to run."""
        rc = lib.decree_agent_tool_start(self._handle(), _enc(session), _enc(tool), _enc(tool_id))
        if rc < 0:
            _raise(rc)

    def agent_record_paths(self, session: str, paths: Iterable[PathLike], tool: Optional[str] = None) -> int:
        """Journal that a tool changed these paths (relative to the root):
        what each holds now.  Returns how many were recorded."""
        arr = _lib.cstrings(list(paths))
        n = c_size_t(0)
        rc = lib.decree_agent_record_paths(
            byref(n), self._handle(), _enc(session), _enc(tool), ctypes.cast(arr, _lib.c_char_pp)
        )
        if rc < 0:
            _raise(rc)
        return n.value

    def agent_record_scan(self, session: str, tool: Optional[str] = None, tool_id: Optional[str] = None) -> int:
        """Journal what a shell command or unknown tool changed (a walk
        with the stat cache).  Returns how many paths were recorded."""
        n = c_size_t(0)
        rc = lib.decree_agent_record_scan(byref(n), self._handle(), _enc(session), _enc(tool), _enc(tool_id))
        if rc < 0:
            _raise(rc)
        return n.value

    def agent_sessions(self) -> List[AgentSession]:
        """The agent sessions of this root with a journal, most recent last."""
        lst = c_void_p()
        rc = lib.decree_agent_sessions_get(byref(lst), self._handle())
        if rc < 0:
            _raise(rc)
        try:
            out = []
            for i in range(lib.decree_agent_sessions_count(lst)):
                s = lib.decree_agent_sessions_at(lst, i).contents
                out.append(AgentSession(_dec(s.session) or "", _dec(s.agent), s.turns, s.last_ns, s.last_at.decode()))
            return out
        finally:
            lib.decree_agent_sessions_free(lst)

    def rewind_list(self, session: Optional[str] = None) -> RewindList:
        """The turns of an agent session (None: the most recent one)."""
        lst = c_void_p()
        rc = lib.decree_rewind_list_get(byref(lst), self._handle(), _enc(session))
        if rc < 0:
            _raise(rc)
        try:
            turns = []
            for i in range(lib.decree_rewind_list_count(lst)):
                t = lib.decree_rewind_list_at(lst, i).contents
                files = [
                    os.fsdecode(lib.decree_rewind_list_file(lst, i, k))
                    for k in range(lib.decree_rewind_list_file_count(lst, i))
                ]
                turns.append(
                    TurnInfo(
                        t.turn,
                        _dec(t.message),
                        _dec(t.prompt),
                        t.checkpoint.decode(),
                        t.checkpoint_exists,
                        t.created_ns,
                        t.created_at.decode(),
                        files,
                    )
                )
            return RewindList(
                _dec(lib.decree_rewind_list_session(lst)) or "",
                _dec(lib.decree_rewind_list_agent(lst)),
                turns,
                lib.decree_rewind_list_damaged(lst),
            )
        finally:
            lib.decree_rewind_list_free(lst)

    def rewind(
        self,
        turn: int,
        session: Optional[str] = None,
        *,
        agent_only: bool = False,
        dry_run: bool = False,
        paths: Optional[Sequence[PathLike]] = None,
        cancel: Optional[Cancel] = None,
        on_plan: Optional[Callable[[PlanEntry], None]] = None,
    ) -> RestoreResult:
        """Restore the tree to before turn ``turn`` (1 = first) of an agent
        session (None: the most recent); ``agent_only`` keeps the user's
        edits."""
        h = self._handle()
        s = _enc(session)
        return self._run_restore(
            lambda res, o: lib.decree_rewind(res, h, s, turn, o),
            paths, dry_run, agent_only, cancel, on_plan, None,
        )

    # -- workspaces (decree/workspace.h, docs/workspaces.md)

    def workspace_create(
        self,
        name: Optional[str] = None,
        *,
        from_: Optional[str] = None,
        no_reflink: bool = False,
    ) -> Workspace:
        """Make a workspace: a copy of the project's scanned tree in
        ``<store>/workspaces/NAME`` (``decree_workspace_create``).

        ``name`` None: ``ws-1``, ``ws-2``, ... (the first free).
        ``from_``: the base checkpoint (a reference); None checkpoints the
        project now (session ``workspace``).  Files are reflink clones
        where the file system really shares extents (checked), copies
        otherwise; ``no_reflink`` always copies.  The result says how
        (``mode``, ``reflink_verified``, ``copy``).  Raises
        :class:`decree.ExistsError` for a name in use,
        :class:`decree.InvalidError` for a bad one,
        :class:`decree.NotFoundError` for an unknown ``from_``."""
        o = _lib.WorkspaceCreateOptions()
        o.version = _lib.WorkspaceCreateOptions.VERSION
        o.name = _enc(name)
        o.from_ = _enc(from_)
        o.no_reflink = no_reflink
        out = _lib.WorkspaceInfo()
        self._mutating()
        rc = lib.decree_workspace_create(byref(out), self._handle(), byref(o))
        if rc < 0:
            _raise(rc)
        try:
            ws = Workspace._from(out)
        finally:
            lib.decree_workspace_info_release(byref(out))
        self._check_warning()
        return ws

    def workspace_list(self) -> List[Workspace]:
        """The workspaces of this project, by name."""
        v = ctypes.POINTER(_lib.WorkspaceInfo)()
        n = c_size_t(0)
        rc = lib.decree_workspace_list(byref(v), byref(n), self._handle())
        if rc < 0:
            _raise(rc)
        try:
            return [Workspace._from(v[i]) for i in range(n.value)]
        finally:
            lib.decree_workspace_list_free(v, n.value)

    def workspace_get(self, name: str) -> Workspace:
        """One workspace (:class:`decree.NotFoundError` if there is none
        by that name)."""
        out = _lib.WorkspaceInfo()
        rc = lib.decree_workspace_get(byref(out), self._handle(), _enc(name))
        if rc < 0:
            _raise(rc)
        try:
            return Workspace._from(out)
        finally:
            lib.decree_workspace_info_release(byref(out))

    def workspace_path(self, name: str) -> str:
        """The absolute directory of a workspace (``decree workspace
        path``): work there, then :meth:`workspace_diff` /
        :meth:`workspace_apply`."""
        return self.workspace_get(name).path

    def workspace_diff(
        self,
        name: str,
        *,
        context: int = 3,
        no_text: bool = False,
        paths: Optional[Sequence[PathLike]] = None,
    ) -> Diff:
        """The workspace's changes: its base checkpoint against its files
        now, the same records as :meth:`diff` (docs/diff-format.md)."""
        o = _lib.DiffOptions()
        o.version = _lib.DiffOptions.VERSION
        o.context = context
        o.no_text = no_text
        arr = _lib.cstrings(paths)
        if arr is not None:
            o.paths = ctypes.cast(arr, _lib.c_char_pp)
        files: List[DiffFile] = []
        cb = _lib.DIFF_CB(lambda _p, f: _collect_diff(files, f))
        rc = lib.decree_workspace_diff(self._handle(), _enc(name), byref(o), cb, None)
        if rc < 0:
            _raise(rc)
        return Diff(files)

    def workspace_conflicts(self, name: str) -> WorkspaceConflicts:
        """What applying the workspace now would find, without writing
        (``decree_workspace_apply`` with ``check_only``).  Conflicts are
        the answer here, not an exception: ``clean`` is False and
        ``conflicts`` has each path with its reason."""
        report: List[ApplyReport] = []

        def rep(_p, path, action, detail):
            report.append(
                ApplyReport(os.fsdecode(path), _enum_name(lib.decree_apply_action_name, action), _dec(detail))
            )

        o = _lib.ApplyOptions()
        o.version = _lib.ApplyOptions.VERSION
        o.check_only = True
        o.strip = -1
        o.report = _lib.APPLY_REPORT_CB(rep)
        res = _lib.ApplyResult()
        rc = lib.decree_workspace_apply(byref(res), self._handle(), _enc(name), byref(o))
        if rc < 0 and rc != -6:  # DECREE_ECONFLICT: reported above
            _raise(rc)
        conflicts = [r for r in report if r.action == "conflict"]
        return WorkspaceConflicts(
            not conflicts,
            len(report),
            res.created + res.modified + res.deleted,
            conflicts,
            report,
        )

    def workspace_apply(
        self,
        name: str,
        *,
        check: bool = False,
        exec: Optional[str] = None,
        session: Optional[str] = None,
        cancel: Optional[Cancel] = None,
        on_progress: Optional[Callable[[str, Optional[str], Optional[str]], None]] = None,
    ) -> ApplyResult:
        """Carry the workspace's changes onto the project as it is now,
        merged path by path with what changed there meanwhile
        (``decree_workspace_apply``; docs/workspaces.md has the rules).

        One transaction on the project's undo history (:meth:`undo`
        reverts it).  A conflict anywhere raises
        :class:`decree.ConflictError` and writes nothing; its ``report``
        has every path, the conflicting ones with their reason.
        ``check``: only report.  ``exec``: run afterwards in the project,
        rolled back if it fails (:class:`decree.ExecError`).  The
        workspace itself is left as it is."""
        h = self._handle()
        nm = _enc(name)
        return self._run_apply(
            lambda res, o: lib.decree_workspace_apply(res, h, nm, o),
            check, False, -1, exec, session, cancel, on_progress,
        )

    def workspace_discard(self, name: str) -> str:
        """Remove a workspace, after capturing it (a checkpoint of the
        workspace root, label ``discarded``); returns that capture's id.
        The removal is on the project's undo history: :meth:`undo` makes
        the workspace again (its result has a ``workspace`` notice),
        :meth:`redo` discards it again."""
        buf = ctypes.create_string_buffer(_lib.ID_LEN)
        self._mutating()
        rc = lib.decree_workspace_discard(buf, self._handle(), _enc(name))
        if rc < 0:
            _raise(rc)
        self._check_warning()
        return buf.value.decode()


def _collect_diff(files: List[DiffFile], fp) -> int:
    f = fp.contents
    text = None
    if f.text:
        text = ctypes.string_at(f.text, f.len).decode("utf-8", "surrogateescape")
    files.append(
        DiffFile(
            os.fsdecode(f.path),
            f.status.decode(),
            f.old_mode,
            f.new_mode,
            f.binary,
            f.skipped,
            f.added,
            f.removed,
            text,
        )
    )
    return 0


def _txn_progress(fn, flag, err):
    def tramp(_p, phase, path, action):
        try:
            fn(_enum_name(lib.decree_phase_name, phase), _dec(path), _dec(action))
        except BaseException as ex:
            err.append(ex)
            flag.value = 1

    return _lib.TXN_PROGRESS_CB(tramp)


def patch_files(text: Union[str, bytes], *, name: str = "<patch>", strip: int = -1) -> List[DiffFile]:
    """The file records of a unified diff, without applying it."""
    data = text.encode() if isinstance(text, str) else bytes(text)
    files: List[DiffFile] = []
    cb = _lib.DIFF_CB(lambda _p, f: _collect_diff(files, f))
    rc = lib.decree_patch_files(_enc(name), data, len(data), strip, cb, None)
    if rc < 0:
        _raise(rc)
    return files


def init_project(root: PathLike) -> List[str]:
    """``decree init``: make ``root`` a pipeline project; returns what was
    created (relative paths; nothing existing is overwritten)."""
    made: List[str] = []

    def cb(_p, path, is_dir):
        made.append(os.fsdecode(path) + ("/" if is_dir else ""))

    n = c_size_t(0)
    rc = lib.decree_project_init(byref(n), os.fsencode(root), _lib.INIT_CB(cb), None)
    if rc < 0:
        _raise(rc)
    return made


@dataclass
class ProjectConfig:
    """``.decree/config.yml`` (docs/config.md); unset keys hold their
    defaults."""

    store: Optional[str]
    max_file_size: int
    excludes: List[str]
    router: Optional[str]
    ai: Optional[str]
    max_retries: int
    max_depth: int
    default_routine: str
    notebook_support: bool


class Project:
    """A project root and its optional ``.decree/config.yml``.

    ``Project(".")`` finds the root as the program does (the nearest
    ancestor holding ``.decree/``, else the directory itself);
    :meth:`store` opens the store the configuration names."""

    def __init__(self, start: PathLike = ".") -> None:
        self.root = find_root(start)

    @property
    def config(self) -> ProjectConfig:
        cfg = ctypes.POINTER(_lib.Config)()
        rc = lib.decree_config_load(byref(cfg), os.fsencode(self.root))
        if rc < 0:
            _raise(rc)
        try:
            c = cfg.contents
            ex = []
            i = 0
            while c.excludes and c.excludes[i] is not None:
                ex.append(os.fsdecode(c.excludes[i]))
                i += 1
            return ProjectConfig(
                _dec(c.store),
                c.max_file_size,
                ex,
                _dec(c.router),
                _dec(c.ai),
                c.max_retries,
                c.max_depth,
                _dec(c.default_routine) or "develop",
                c.notebook_support,
            )
        finally:
            lib.decree_config_free(cfg)

    def init(self) -> List[str]:
        """Make the root a pipeline project (``decree init``)."""
        return init_project(self.root)

    def store(self, store: Optional[PathLike] = None, **kw) -> Store:
        """Open the project's store (the config's, or ``store``)."""
        return Store(self.root, store, use_config=True, **kw)

    def __repr__(self) -> str:
        return "<decree.Project root=%r>" % self.root
