"""decree: reviewable, reversible changes to a directory tree.

A thin, typed layer over libdecree (ctypes; no C extension)::

    import decree

    with decree.Store("/path/to/project", store="/path/to/store") as s:
        cp = s.create(session="chat-42", message="turn-1", label="fix the bug")
        ...                                    # the agent edits files
        print(s.diff(cp.id).text)              # what changed since
        s.restore(cp.id, agent_only=True)      # rewind the agent's edits only
        s.undo()                               # changed my mind

docs/bindings.md describes every call; ``decree.hermes`` is a drop-in for
the Hermes agent's CheckpointManager.
"""

from .core import (
    ApplyReport,
    ApplyResult,
    AgentSession,
    Cancel,
    Change,
    Checkpoint,
    Created,
    DamagedRecord,
    Diff,
    DiffFile,
    FileEntry,
    FsckProblem,
    FsckResult,
    GcStats,
    Notice,
    PlanEntry,
    ProgressInfo,
    Project,
    ProjectConfig,
    ProjectInfo,
    RecoverResult,
    RestoreResult,
    RewindList,
    Snapshot,
    Store,
    Turn,
    TurnInfo,
    Workspace,
    WorkspaceConflicts,
    WorkspaceCopy,
    find_root,
    init_project,
    patch_files,
    version,
)
from .errors import (
    AmbiguousError,
    ApplyError,
    CancelledError,
    ConflictError,
    CorruptError,
    DecreeError,
    DecreeWarning,
    ExecError,
    ExistsError,
    InvalidError,
    LockedError,
    LogDamagedError,
    NotFoundError,
    UnfinishedError,
    VerifyError,
)

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
