"""ctypes declarations of libdecree's public API (include/decree/*.h).

Only this module knows the C layout.  Every struct mirrors its header
field for field (ctypes applies the C alignment rules); every function
gets its argtypes/restype so that a wrong call is a Python TypeError, not
a crash.  The structs carry the ``version`` of the headers they were
written against (the library accepts older versions, never newer ones).

Finding the library, first match wins (docs/bindings.md):

1. ``DECREE_LIBRARY``: the path of a libdecree.so to load;
2. a ``libdecree.so*`` next to this file (``pip install`` copies the one
   of the source tree's build/ into the package when it exists);
3. ``pkg-config --variable=libdir decree`` (after ``make install``);
4. the dynamic loader's own search (``ldconfig`` cache, LD_LIBRARY_PATH).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_bool,
    c_char,
    c_char_p,
    c_int,
    c_int64,
    c_size_t,
    c_uint,
    c_uint64,
    c_void_p,
)
from typing import List, Optional

ID_LEN = 65  # DECREE_ID_HEXLEN + 1

# ----------------------------------------------------------------- loading


def _candidates() -> List[str]:
    out: List[str] = []
    env = os.environ.get("DECREE_LIBRARY")
    if env:
        return [env]  # an explicit choice is never second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libdecree.so", "libdecree.so.0"):
        p = os.path.join(here, name)
        if os.path.exists(p):
            out.append(p)
    if shutil.which("pkg-config"):
        try:
            libdir = subprocess.run(
                ["pkg-config", "--variable=libdir", "decree"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            libdir = ""
        if libdir:
            for name in ("libdecree.so.0", "libdecree.so"):
                p = os.path.join(libdir, name)
                if os.path.exists(p):
                    out.append(p)
    found = ctypes.util.find_library("decree")
    out.append(found or "libdecree.so.0")
    return out


def _load() -> ctypes.CDLL:
    errors = []
    for cand in _candidates():
        try:
            return ctypes.CDLL(cand)
        except OSError as e:
            errors.append("%s: %s" % (cand, e))
    raise ImportError(
        "decree: cannot load libdecree (set DECREE_LIBRARY to its path, "
        "or run 'make install'): " + "; ".join(errors)
    )


lib = _load()

# ----------------------------------------------------------------- structs

c_char_pp = POINTER(c_char_p)


class StoreOptions(Structure):
    VERSION = 2
    _fields_ = [
        ("version", c_uint),
        ("root", c_char_p),
        ("store_path", c_char_p),
        ("max_file_size", c_uint64),
        ("excludes", c_char_pp),
        ("lock_timeout_ms", c_int),
        ("threads", c_uint),
        ("flags", c_uint),
    ]


STORE_MISSING_ROOT = 1 << 0


class Progress(Structure):
    _fields_ = [
        ("stage", c_int),
        ("files", c_uint64),
        ("files_total", c_uint64),
        ("bytes", c_uint64),
        ("bytes_total", c_uint64),
        ("total_known", c_bool),
    ]


PROGRESS_FN = CFUNCTYPE(None, c_void_p, POINTER(Progress))


class CheckpointInfo(Structure):
    _fields_ = [
        ("id", c_char * ID_LEN),
        ("session", c_char_p),
        ("message", c_char_p),
        ("label", c_char_p),
        ("created_ns", c_int64),
        ("created_at", c_char * 40),
        ("file_count", c_uint64),
        ("total_bytes", c_uint64),
        ("skipped_count", c_uint64),
        ("has_changes", c_bool),
        ("tree", c_char * ID_LEN),
        ("files_changed", c_int64),
        ("insertions", c_int64),
        ("deletions", c_int64),
    ]


class CreateOptions(Structure):
    VERSION = 2
    _fields_ = [
        ("version", c_uint),
        ("session", c_char_p),
        ("message", c_char_p),
        ("label", c_char_p),
        ("if_changed", c_bool),
        ("excludes", c_char_pp),
        ("max_file_size", c_uint64),
    ]


class Created(Structure):
    _fields_ = [
        ("id", c_char * ID_LEN),
        ("tree", c_char * ID_LEN),
        ("created", c_bool),
        ("files_changed", c_int64),
        ("insertions", c_int64),
        ("deletions", c_int64),
    ]


LIST_HAS_CHANGES = 1 << 0


class DamagedRecord(Structure):
    _fields_ = [
        ("id", c_char * ID_LEN),
        ("problem", c_char_p),
        ("damaged", c_bool),
        ("removed", c_bool),
    ]


class Notice(Structure):
    _fields_ = [
        ("kind", c_int),
        ("message", c_char_p),
        ("count", c_uint64),
        ("files", c_uint64),
        ("path", c_char_p),
        ("size", c_uint64),
        ("limit", c_uint64),
        ("rule_source", c_char_p),
        ("rule", c_char_p),
        ("rule_count", c_uint64),
        ("checkpoint", c_char * ID_LEN),
        ("created_at", c_char * 40),
        ("session", c_char_p),
        ("msg", c_char_p),
        ("label", c_char_p),
        ("paths", c_char_pp),
        ("npaths", c_size_t),
    ]


class FileInfo(Structure):
    _fields_ = [
        ("path", c_char_p),
        ("sha256", c_char * ID_LEN),
        ("size", c_uint64),
        ("mode", c_uint),
        ("skip_reason", c_char_p),
    ]


CHANGE_CB = CFUNCTYPE(c_int, c_void_p, c_char_p, c_char)

PLAN_CB = CFUNCTYPE(None, c_void_p, c_char_p, c_int)
TXN_PROGRESS_CB = CFUNCTYPE(None, c_void_p, c_int, c_char_p, c_char_p)


class RestoreOptions(Structure):
    VERSION = 3
    _fields_ = [
        ("version", c_uint),
        ("paths", c_char_pp),
        ("dry_run", c_bool),
        ("plan", PLAN_CB),
        ("progress", TXN_PROGRESS_CB),
        ("payload", c_void_p),
        ("cancel", POINTER(c_int)),
        ("agent_only", c_bool),
    ]


class RestoreResult(Structure):
    _fields_ = [
        ("created", c_size_t),
        ("restored", c_size_t),
        ("deleted", c_size_t),
        ("skipped_user_edits", c_size_t),
        ("pre_checkpoint", c_char * ID_LEN),
    ]


class DiffFile(Structure):
    _fields_ = [
        ("path", c_char_p),
        ("status", c_char),
        ("old_mode", c_uint),
        ("new_mode", c_uint),
        ("binary", c_bool),
        ("skipped", c_bool),
        ("added", c_uint64),
        ("removed", c_uint64),
        ("text", c_void_p),
        ("len", c_size_t),
    ]


DIFF_CB = CFUNCTYPE(c_int, c_void_p, POINTER(DiffFile))


class DiffOptions(Structure):
    VERSION = 1
    _fields_ = [
        ("version", c_uint),
        ("context", c_uint),
        ("no_text", c_bool),
        ("paths", c_char_pp),
    ]


APPLY_REPORT_CB = CFUNCTYPE(None, c_void_p, c_char_p, c_int, c_char_p)
APPLY_VERIFY_CB = CFUNCTYPE(c_int, c_void_p, c_char_p, c_bool, c_uint, c_char_p)


class ApplyOptions(Structure):
    VERSION = 2
    _fields_ = [
        ("version", c_uint),
        ("check_only", c_bool),
        ("reverse", c_bool),
        ("strip", c_int),
        ("exec_", c_char_p),
        ("exec_stdout_to_stderr", c_bool),
        ("session", c_char_p),
        ("report", APPLY_REPORT_CB),
        ("progress", TXN_PROGRESS_CB),
        ("verify", APPLY_VERIFY_CB),
        ("payload", c_void_p),
        ("cancel", POINTER(c_int)),
    ]


class ApplyResult(Structure):
    _fields_ = [
        ("created", c_size_t),
        ("modified", c_size_t),
        ("deleted", c_size_t),
        ("skipped", c_size_t),
        ("conflicts", c_size_t),
        ("exec_ran", c_bool),
        ("exec_status", c_int),
        ("restored", c_size_t),
        ("removed", c_size_t),
        ("swept", c_size_t),
        ("exec_checkpoint", c_char * ID_LEN),
    ]


class RecoverResult(Structure):
    _fields_ = [("recovered", c_bool), ("left_alone", c_size_t)]


class RecoverOptions(Structure):
    VERSION = 1
    _fields_ = [("version", c_uint), ("rollback", c_bool)]


class GcStats(Structure):
    _fields_ = [
        ("objects_freed", c_uint64),
        ("bytes_freed", c_uint64),
        ("objects_kept", c_uint64),
    ]


FSCK_CB = CFUNCTYPE(None, c_void_p, c_int, c_char_p, c_char_p)
FSCK_REPAIR = 1 << 0


class FsckOptions(Structure):
    VERSION = 1
    _fields_ = [
        ("version", c_uint),
        ("flags", c_uint),
        ("cb", FSCK_CB),
        ("payload", c_void_p),
    ]


class TurnOptions(Structure):
    VERSION = 1
    _fields_ = [
        ("version", c_uint),
        ("session", c_char_p),
        ("agent", c_char_p),
        ("message", c_char_p),
        ("prompt", c_char_p),
        ("ensure", c_bool),
    ]


class TurnResult(Structure):
    _fields_ = [
        ("turn", c_uint),
        ("checkpoint", c_char * ID_LEN),
        ("started", c_bool),
    ]


class AgentSessionInfo(Structure):
    _fields_ = [
        ("session", c_char_p),
        ("agent", c_char_p),
        ("turns", c_size_t),
        ("last_ns", c_int64),
        ("last_at", c_char * 40),
    ]


class TurnInfo(Structure):
    _fields_ = [
        ("turn", c_uint),
        ("message", c_char_p),
        ("prompt", c_char_p),
        ("checkpoint", c_char * ID_LEN),
        ("checkpoint_exists", c_bool),
        ("created_ns", c_int64),
        ("created_at", c_char * 40),
        ("file_count", c_size_t),
    ]


class ProjectsInfo(Structure):
    _fields_ = [
        ("root", c_char_p),
        ("key", c_char_p),
        ("exists", c_bool),
        ("is_current", c_bool),
        ("checkpoints", c_size_t),
        ("damaged", c_size_t),
        ("history", c_size_t),
        ("bytes", c_uint64),
        ("last_ns", c_int64),
        ("last_at", c_char_p),
        ("workspace", c_char_p),
    ]


class Config(Structure):
    _fields_ = [
        ("store", c_char_p),
        ("max_file_size", c_uint64),
        ("excludes", c_char_pp),
        ("router", c_char_p),
        ("ai", c_char_p),
        ("max_retries", ctypes.c_long),
        ("max_depth", ctypes.c_long),
        ("default_routine", c_char_p),
        ("notebook_support", c_bool),
    ]


INIT_CB = CFUNCTYPE(None, c_void_p, c_char_p, c_bool)


class WorkspaceCopy(Structure):
    _fields_ = [
        ("cloned", c_uint64),
        ("copied", c_uint64),
        ("from_store", c_uint64),
        ("links", c_uint64),
        ("dirs", c_uint64),
        ("bytes", c_uint64),
    ]


class WorkspaceInfo(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("path", c_char_p),
        ("project", c_char_p),
        ("base", c_char * ID_LEN),
        ("base_tree", c_char * ID_LEN),
        ("created_ns", c_int64),
        ("mode", c_char * 8),
        ("reflink_verified", c_bool),
        ("copy", WorkspaceCopy),
    ]


class WorkspaceCreateOptions(Structure):
    VERSION = 1
    _fields_ = [
        ("version", c_uint),
        ("name", c_char_p),
        ("from_", c_char_p),
        ("no_reflink", c_bool),
    ]

# ----------------------------------------------------------------- functions

_vp = c_void_p  # opaque handles
_P = POINTER


def _fn(name: str, restype, *argtypes) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_fn("decree_error_last", c_char_p)
_fn("decree_error_last_code", c_int)
_fn("decree_error_clear", None)
_fn("decree_warning_last", c_char_p)
_fn("decree_warning_last_code", c_int)
_fn("decree_warning_clear", None)
_fn("decree_version", c_char_p)
# the names of the enums, as --json gives them ("other" for an unknown value)
for _enum_fn in (
    "decree_action_name",
    "decree_phase_name",
    "decree_apply_action_name",
    "decree_progress_stage_name",
    "decree_fsck_problem_name",
    "decree_notice_kind_name",
):
    _fn(_enum_fn, c_char_p, c_int)
del _enum_fn

_fn("decree_store_open", c_int, _P(_vp), _P(StoreOptions))
_fn("decree_store_free", None, _vp)
_fn("decree_store_root", c_char_p, _vp)
_fn("decree_store_path", c_char_p, _vp)
_fn("decree_store_root_exists", c_bool, _vp)
_fn("decree_store_set_progress", None, _vp, PROGRESS_FN, c_void_p)

_fn("decree_checkpoint_create", c_int, c_char_p, _P(c_bool), _vp, _P(CreateOptions))
_fn("decree_checkpoint_create_ext", c_int, _P(Created), _vp, _P(CreateOptions))
_fn("decree_checkpoint_is_capture", c_bool, _P(CheckpointInfo))
_fn("decree_checkpoint_list_get", c_int, _P(_vp), _vp, c_char_p, c_uint)
_fn("decree_checkpoint_list_count", c_size_t, _vp)
_fn("decree_checkpoint_list_at", _P(CheckpointInfo), _vp, c_size_t)
_fn("decree_checkpoint_list_free", None, _vp)
_fn("decree_checkpoint_damaged_count", c_size_t, _vp)
_fn("decree_checkpoint_damaged_at", _P(DamagedRecord), _vp, c_size_t)
_fn("decree_notice_count", c_size_t, _vp)
_fn("decree_notice_at", _P(Notice), _vp, c_size_t)
_fn("decree_checkpoint_resolve", c_int, c_char_p, _vp, c_char_p)
_fn("decree_checkpoint_show", c_int, _P(_vp), _P(CheckpointInfo), _vp, c_char_p)
_fn("decree_snapshot_count", c_size_t, _vp)
_fn("decree_snapshot_at", None, _P(FileInfo), _vp, c_size_t)
_fn("decree_snapshot_free", None, _vp)
_fn("decree_checkpoint_prune", c_int, _P(c_size_t), _vp, c_char_p, ctypes.c_long,
    ctypes.c_long)
_fn("decree_checkpoint_drop", c_int, _P(c_size_t), _vp, c_char_p)
_fn("decree_checkpoint_delete", c_int, _vp, c_char_p)
_fn("decree_checkpoint_compare", c_int, _vp, c_char_p, c_char_p, CHANGE_CB, c_void_p)

_fn("decree_checkpoint_restore", c_int, _P(RestoreResult), _vp, c_char_p,
    _P(RestoreOptions))
_fn("decree_undo", c_int, _P(RestoreResult), _vp, _P(RestoreOptions))
_fn("decree_redo", c_int, _P(RestoreResult), _vp, _P(RestoreOptions))
_fn("decree_history_drop_damaged", c_int, _P(c_size_t), _vp)

_fn("decree_checkpoint_diff", c_int, _vp, c_char_p, c_char_p, _P(DiffOptions),
    DIFF_CB, c_void_p)
_fn("decree_patch_files", c_int, c_char_p, c_char_p, c_size_t, c_int, DIFF_CB,
    c_void_p)
_fn("decree_apply", c_int, _P(ApplyResult), _vp, c_char_p, c_char_p, c_size_t,
    _P(ApplyOptions))

_fn("decree_recover", c_int, _P(RecoverResult), _vp)
_fn("decree_recover_ext", c_int, _P(RecoverResult), _vp, _P(RecoverOptions))
_fn("decree_gc", c_int, _P(GcStats), _vp, c_bool)
_fn("decree_fsck_ext", c_int, _vp, _P(FsckOptions))

_fn("decree_agent_turn", c_int, _P(TurnResult), _vp, _P(TurnOptions))
_fn("decree_agent_tool_start", c_int, _vp, c_char_p, c_char_p, c_char_p)
_fn("decree_agent_record_paths", c_int, _P(c_size_t), _vp, c_char_p, c_char_p,
    c_char_pp)
_fn("decree_agent_record_scan", c_int, _P(c_size_t), _vp, c_char_p, c_char_p,
    c_char_p)
_fn("decree_agent_sessions_get", c_int, _P(_vp), _vp)
_fn("decree_agent_sessions_count", c_size_t, _vp)
_fn("decree_agent_sessions_at", _P(AgentSessionInfo), _vp, c_size_t)
_fn("decree_agent_sessions_free", None, _vp)
_fn("decree_rewind_list_get", c_int, _P(_vp), _vp, c_char_p)
_fn("decree_rewind_list_session", c_char_p, _vp)
_fn("decree_rewind_list_agent", c_char_p, _vp)
_fn("decree_rewind_list_count", c_size_t, _vp)
_fn("decree_rewind_list_at", _P(TurnInfo), _vp, c_size_t)
_fn("decree_rewind_list_file_count", c_size_t, _vp, c_size_t)
_fn("decree_rewind_list_file", c_char_p, _vp, c_size_t, c_size_t)
_fn("decree_rewind_list_damaged", c_size_t, _vp)
_fn("decree_rewind_list_free", None, _vp)
_fn("decree_rewind", c_int, _P(RestoreResult), _vp, c_char_p, c_uint,
    _P(RestoreOptions))

_fn("decree_projects_list", c_int, _P(_vp), _vp)
_fn("decree_projects_count", c_size_t, _vp)
_fn("decree_projects_at", _P(ProjectsInfo), _vp, c_size_t)
_fn("decree_projects_free", None, _vp)
_fn("decree_projects_move", c_int, _vp, c_char_p, c_char_p)

_fn("decree_config_load", c_int, _P(_P(Config)), c_char_p)
_fn("decree_config_free", None, _P(Config))
_fn("decree_project_find_root", c_int, c_char_p, c_size_t, c_char_p)
_fn("decree_project_init", c_int, _P(c_size_t), c_char_p, INIT_CB, c_void_p)

_fn("decree_workspace_info_release", None, _P(WorkspaceInfo))
_fn("decree_workspace_create", c_int, _P(WorkspaceInfo), _vp,
    _P(WorkspaceCreateOptions))
_fn("decree_workspace_list", c_int, _P(_P(WorkspaceInfo)), _P(c_size_t), _vp)
_fn("decree_workspace_list_free", None, _P(WorkspaceInfo), c_size_t)
_fn("decree_workspace_get", c_int, _P(WorkspaceInfo), _vp, c_char_p)
_fn("decree_workspace_diff", c_int, _vp, c_char_p, _P(DiffOptions), DIFF_CB,
    c_void_p)
_fn("decree_workspace_apply", c_int, _P(ApplyResult), _vp, c_char_p,
    _P(ApplyOptions))
_fn("decree_workspace_discard", c_int, c_char_p, _vp, c_char_p)


def cstrings(items) -> Optional["ctypes.Array[c_char_p]"]:
    """A NULL-terminated ``const char *const *`` from str/bytes/PathLike
    items (None stays NULL).  Keep the returned array alive for the call."""
    if items is None:
        return None
    enc = [os.fsencode(x) for x in items]
    arr = (c_char_p * (len(enc) + 1))(*enc)
    arr[len(enc)] = None
    return arr
