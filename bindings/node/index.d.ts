// Types of the decree Node package (index.js).

/** decree's --json error codes (docs/schema/error.schema.json). */
export type DecreeErrorCode =
  | 'error' | 'not_found' | 'exists' | 'locked' | 'conflict' | 'corrupt'
  | 'apply' | 'invalid' | 'ambiguous' | 'verify' | 'exec' | 'unfinished'
  | 'cancelled' | 'log_damaged';

/** A failed decree call. */
export class DecreeError extends Error {
  constructor(message: string, code?: DecreeErrorCode, errno?: number);
  readonly name: 'DecreeError';
  /** The class of failure, as decree's --json errors name it. */
  code: DecreeErrorCode;
  /** decree's negative error code (DECREE_ENOTFOUND = -3, ...). */
  errno: number;
  /** apply, workspaceApply: the per-path report (conflicts have a
   *  detail). */
  files?: ApplyFile[];
  /** apply with exec whose command failed: its status and the rollback. */
  execStatus?: number;
  restored?: number;
  removed?: number;
  swept?: number;
  execCheckpoint?: string | null;
}

/** The version of the linked libdecree. */
export const version: string;

export interface OpenOptions {
  /** The project root (required). */
  root: string;
  /** The store directory (default: .decree/config.yml's store:, else
   *  <root>/.decree/store). */
  store?: string;
  /** Files above this many bytes are not stored (default 50 MiB). */
  maxFileSize?: number | bigint;
  /** Extra ignore patterns (gitignore syntax) for every call. */
  excludes?: string[];
  /** How long to wait for another process's store lock (default 30000;
   *  0: fail at once with code "locked"). */
  lockTimeoutMs?: number;
  /** Hashing threads (0 or absent: all cores). */
  threads?: number;
  /** The root no longer exists: list, drop, prune, gc and fsck work. */
  missingRoot?: boolean;
  /** false: do not read the project's .decree/config.yml. */
  config?: boolean;
}

/** Something a call did that the user would not expect. */
export interface Notice {
  kind: 'mostly_ignored' | 'existing' | 'too_large' | 'edits_saved' | 'workspace' | 'other';
  message: string;
  checkpoint: string | null;
  count?: number;
  files?: number;
  ruleSource?: string | null;
  rule?: string | null;
  ruleCount?: number;
  createdAt?: string;
  session?: string | null;
  msg?: string | null;
  path?: string | null;
  size?: number;
  limit?: number;
  /** edits_saved: the capture's label; workspace: the workspace's name. */
  label?: string | null;
  paths?: string[];
}

/** undo() / redo() of a workspace discard. */
export interface WorkspaceNotice extends Notice {
  kind: 'workspace';
  /** The workspace's name. */
  label: string | null;
  /** Its directory. */
  path: string | null;
  /** 1: made again (undo); 0: discarded again (redo). */
  count: number;
}

/** Set on a result when the call succeeded but left a warning. */
export interface Warned {
  warning?: string;
  /** "unfinished": the next mutating call finishes it; "note" otherwise. */
  warningCode?: 'unfinished' | 'note';
}

export interface CheckpointOptions {
  /** The timeline (default "default"). */
  session?: string;
  /** One checkpoint per (session, message): the same again returns it. */
  message?: string;
  label?: string;
  /** Make none when the tree equals the session's latest checkpoint. */
  ifChanged?: boolean;
  /** Extra ignore patterns, kept in the checkpoint. */
  excludes?: string[];
  /** Size limit for this checkpoint, kept in it. */
  maxFileSize?: number | bigint;
}

export interface Created extends Warned {
  id: string;
  tree: string;
  /** false: an existing checkpoint was returned. */
  created: boolean;
  filesChanged: number | null;
  insertions: number | null;
  deletions: number | null;
  notices: Notice[];
}

export interface Checkpoint {
  id: string;
  session: string | null;
  message: string | null;
  label: string | null;
  createdAt: string;
  createdNs: bigint;
  fileCount: number;
  totalBytes: number;
  skippedCount: number;
  /** list() with hasChanges (the default): the tree at the session's next
   *  checkpoint (the last one: the working tree) differs from it. */
  hasChanges?: boolean;
  tree: string;
  /** A capture decree made before changing the tree (pre-restore, ...). */
  capture: boolean;
  filesChanged: number | null;
  insertions: number | null;
  deletions: number | null;
}

export interface DamagedRecord {
  id: string;
  problem: string;
  damaged: boolean;
  removed: boolean;
}

export interface FileInfo {
  path: string;
  sha256: string | null;
  size: number;
  /** 0o644, 0o755, 0o600, ...; 0o120000 for a symlink; 0 skipped. */
  mode: number;
  skipReason: string | null;
}

export interface DiffFile {
  path: string;
  status: 'A' | 'D' | 'M';
  oldMode: number;
  newMode: number;
  binary: boolean;
  skipped: boolean;
  added: number;
  removed: number;
  /** The diff record(s) of the path (docs/diff-format.md); null with
   *  noText or for a skipped file. */
  text: string | null;
}

export interface DiffOptions {
  context?: number;
  noText?: boolean;
  paths?: string[];
}

export interface Change {
  path: string;
  status: 'A' | 'D' | 'M';
}

export interface RestoreOptions {
  /** Only these paths (relative to the root). */
  paths?: string[];
  /** Report the plan, change nothing. */
  dryRun?: boolean;
  /** Aborting before the transaction commits rolls it back (code
   *  "cancelled"). */
  signal?: AbortSignal;
}

export interface AgentRestoreOptions extends RestoreOptions {
  /** Only paths the agent changed after the checkpoint and that are
   *  still as the agent left them. */
  agentOnly?: boolean;
}

export interface PlannedPath {
  path: string;
  action: 'create' | 'restore' | 'delete' | 'replace' | 'skip-user-edit';
}

export interface RestoreResult extends Warned {
  dryRun: boolean;
  created: number;
  restored: number;
  deleted: number;
  skippedUserEdits: number;
  /** The capture of the tree before (undo() brings it back). */
  preCheckpoint: string | null;
  plan: PlannedPath[];
  notices: Notice[];
}

export interface RollbackEntry extends Checkpoint {
  /** 1 = the newest checkpoint the user made; null for a capture. */
  n: number | null;
  kind: 'checkpoint' | 'capture';
  /** "1", "2", ... or "u1", "u2", ... for captures. */
  ref: string;
  /** Files that differ from the working tree. */
  filesDiffer: number;
}

export interface ApplyOptions {
  /** Check and report only. */
  check?: boolean;
  /** Apply new -> old. */
  reverse?: boolean;
  /** Leading path components to strip (default: automatic). */
  strip?: number;
  /** Run with /bin/sh -c in the root after the writes; if it fails the
   *  tree is put back and the call rejects with code "exec". */
  exec?: string;
  /** Session of the safety captures. */
  session?: string;
  /** How messages call the patch (default "<patch>"). */
  name?: string;
  signal?: AbortSignal;
}

export interface ApplyFile {
  path: string;
  action: 'create' | 'modify' | 'delete' | 'skip' | 'conflict';
  detail?: string;
}

export interface ApplyResult extends Warned {
  check: boolean;
  created: number;
  modified: number;
  deleted: number;
  skipped: number;
  conflicts: number;
  execRan: boolean;
  execStatus: number;
  files: ApplyFile[];
}

export interface GcResult extends Warned {
  dryRun: boolean;
  objectsFreed: number;
  bytesFreed: number;
  objectsKept: number;
}

export interface FsckProblem {
  kind: 'damaged' | 'unfinished' | 'repaired' | 'lost' | 'unrepaired' | 'other';
  object: string;
  detail: string;
}

export interface FsckResult extends Warned {
  /** The store is clean (after the repair). */
  ok: boolean;
  problems: FsckProblem[];
}

export interface TurnOptions {
  /** The agent's session id (required). */
  session: string;
  /** "claude-code", "codex", "gemini", ... */
  agent?: string;
  /** The turn's id; absent: "turn-<n>". */
  message?: string;
  /** The user's prompt; its first line labels the checkpoint. */
  prompt?: string;
  /** Join the last turn unless `message` names another one. */
  ensure?: boolean;
}

export interface TurnResult extends Warned {
  turn: number;
  checkpoint: string;
  started: boolean;
}

export interface AgentSession {
  session: string;
  agent: string | null;
  turns: number;
  lastAt: string;
  lastNs: bigint;
}

export interface Turn {
  turn: number;
  message: string | null;
  prompt: string | null;
  checkpoint: string;
  checkpointExists: boolean;
  createdAt: string;
  createdNs: bigint;
  /** The paths the agent changed in this turn. */
  files: string[];
}

export interface RewindList {
  session: string;
  agent: string | null;
  /** Journal records that could not be read. */
  damaged: number;
  turns: Turn[];
}

export interface WorkspaceCreateOptions {
  /** Default: ws-1, ws-2, ... (the first free). */
  name?: string;
  /** The base checkpoint (a reference); default: a new checkpoint of the
   *  project now (session "workspace"). */
  from?: string;
  /** Never clone, always copy. */
  noReflink?: boolean;
}

/** How a workspace's files were made. */
export interface WorkspaceCopy {
  /** Reflink clones of the project's files. */
  cloned: number;
  /** Byte copies of the project's files. */
  copied: number;
  /** Written from the store (the file differed from the base, or was gone). */
  fromStore: number;
  links: number;
  dirs: number;
  /** Of the regular files. */
  bytes: number;
}

/** A workspace (decree_workspace_info). */
export interface Workspace {
  name: string;
  /** Its absolute directory. */
  path: string;
  /** The project root it was made from. */
  project: string;
  /** The base checkpoint (in the project) and its tree. */
  base: string;
  baseTree: string;
  createdNs: bigint;
  /** reflink: every file taken from the project was cloned, and a clone
   *  was verified; copy: none was; mixed. */
  mode: 'reflink' | 'copy' | 'mixed';
  reflinkVerified: boolean;
  copy: WorkspaceCopy;
}

export interface WorkspaceConflicts {
  /** No conflict: an apply now would go through. */
  clean: boolean;
  /** Paths the apply would report. */
  files: number;
  /** Paths it would create, modify or delete. */
  changes: number;
  /** action "conflict", detail "'PATH': reason". */
  conflicts: ApplyFile[];
  /** Every path, as workspaceApply reports it. */
  report: ApplyFile[];
}

export interface WorkspaceApplyOptions {
  /** Check and report only. */
  check?: boolean;
  /** Run with /bin/sh -c in the project after the writes; if it fails the
   *  project is put back and the call rejects with code "exec". */
  exec?: string;
  /** Session of the safety captures. */
  session?: string;
  signal?: AbortSignal;
}

export class Store {
  private constructor(nativeStore: unknown, info: { root: string; storePath: string });
  static open(options: OpenOptions): Promise<Store>;
  /** The absolute project root. */
  readonly root: string;
  /** The store directory. */
  readonly storePath: string;
  /** Close once the calls made before have finished. */
  close(): Promise<void>;

  checkpoint(options?: CheckpointOptions): Promise<Created>;
  list(options?: { session?: string; hasChanges?: boolean }): Promise<Checkpoint[] & { readonly damaged: DamagedRecord[] }>;
  resolve(ref: string): Promise<string>;
  show(ref: string): Promise<{ checkpoint: Checkpoint; files: FileInfo[] }>;
  diff(ref: string, ref2?: string | null, options?: DiffOptions): Promise<DiffFile[]>;
  diffText(ref: string, ref2?: string | null, options?: Omit<DiffOptions, 'noText'>): Promise<string>;
  compare(ref: string, ref2?: string | null): Promise<Change[]>;
  restore(ref: string, options?: AgentRestoreOptions): Promise<RestoreResult>;
  rollbackList(options?: { session?: string }): Promise<RollbackEntry[]>;
  rollback(n: number | string, options?: RestoreOptions & { session?: string }): Promise<RestoreResult>;
  undo(options?: RestoreOptions): Promise<RestoreResult>;
  redo(options?: RestoreOptions): Promise<RestoreResult>;
  dropDamagedHistory(): Promise<{ dropped: number } & Warned>;
  prune(options: { session?: string; keep?: number; olderThanDays?: number }): Promise<{ removed: number } & Warned>;
  drop(options: { session: string } | { all: true }): Promise<{ removed: number } & Warned>;
  delete(ref: string): Promise<Warned>;
  apply(patch: string | Uint8Array, options?: ApplyOptions): Promise<ApplyResult>;
  gc(options?: { dryRun?: boolean }): Promise<GcResult>;
  fsck(options?: { repair?: boolean }): Promise<FsckResult>;
  recover(options?: { rollback?: boolean }): Promise<{ recovered: boolean; leftAlone: number } & Warned>;

  agentTurn(options: TurnOptions): Promise<TurnResult>;
  agentToolStart(session: string, tool?: string | null, toolId?: string | null): Promise<Warned>;
  agentRecordPaths(session: string, tool: string | null, paths: string[]): Promise<{ recorded: number } & Warned>;
  agentRecordScan(session: string, tool?: string | null, toolId?: string | null): Promise<{ changed: number } & Warned>;
  agentSessions(): Promise<AgentSession[]>;
  rewindList(session?: string | null): Promise<RewindList>;
  rewind(turn: number, options?: AgentRestoreOptions & { session?: string }): Promise<RestoreResult>;

  workspaceCreate(options?: WorkspaceCreateOptions): Promise<Workspace & Warned>;
  workspaceList(): Promise<Workspace[]>;
  workspaceGet(name: string): Promise<Workspace>;
  workspacePath(name: string): Promise<string>;
  workspaceDiff(name: string, options?: DiffOptions): Promise<DiffFile[]>;
  workspaceDiffText(name: string, options?: Omit<DiffOptions, 'noText'>): Promise<string>;
  workspaceConflicts(name: string): Promise<WorkspaceConflicts>;
  workspaceApply(name: string, options?: WorkspaceApplyOptions): Promise<ApplyResult>;
  workspaceDiscard(name: string): Promise<{ capture: string } & Warned>;
}

/** Store.open(options). */
export function open(options: OpenOptions): Promise<Store>;
