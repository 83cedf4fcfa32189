// decree for Node: checkpoints, restore, undo/redo, diff and apply, agent
// turns and rewind, workspaces, over libdecree (build/Release/decree.node).
//
// Every method returns a Promise; the decree call runs on libuv's thread
// pool, never on the main thread.  The calls of one Store run one after
// another, in the order they were made (a decree_store handle is used by
// one thread at a time); calls on different Stores run in parallel, and
// several processes may share one store directory (decree's store lock).
// Failures reject with a DecreeError whose `code` is the name decree's
// --json errors use ("not_found", "ambiguous", "conflict", ...).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const native = require('./build/Release/decree.node');

/** A failed decree call: `code` names the class of failure, `errno` is
 *  decree's (negative) error code, the message is decree's one line. */
export class DecreeError extends Error {
  constructor(message, code = 'error', errno = -1) {
    super(message);
    this.name = 'DecreeError';
    this.code = code;
    this.errno = errno;
  }
}
native.setErrorClass(DecreeError);

/** The version of the linked libdecree. */
export const version = native.version();

function invalid(message) {
  return new DecreeError(message, 'invalid', -9);
}

function opts(o, name) {
  if (o === undefined || o === null) return {};
  if (typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`${name}: options must be an object`);
  return o;
}

// An AbortSignal as decree's cancel flag (restore, rollback, undo, redo,
// rewind, apply, workspaceApply): aborting before the transaction commits rolls it back
// and the call rejects with code "cancelled".
function withCancel(o) {
  const { signal, ...rest } = o;
  if (signal === undefined || signal === null) return [rest, null];
  if (typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function')
    throw new TypeError('signal must be an AbortSignal');
  const flag = new native.CancelFlag();
  if (signal.aborted) flag.set();
  const onAbort = () => flag.set();
  signal.addEventListener('abort', onAbort, { once: true });
  return [{ ...rest, cancel: flag }, () => signal.removeEventListener('abort', onAbort)];
}

export class Store {
  #native;
  #tail = Promise.resolve();
  #closed = false;

  /** Use Store.open(). */
  constructor(nativeStore, info) {
    if (!(nativeStore instanceof native.NativeStore)) throw new TypeError('use Store.open()');
    this.#native = nativeStore;
    /** The absolute project root. */
    this.root = info.root;
    /** The store directory. */
    this.storePath = info.storePath;
  }

  /**
   * Open the store of a project root: `store` (default: what the
   * project's .decree/config.yml says, else <root>/.decree/store),
   * `maxFileSize`, `excludes`, `lockTimeoutMs`, `threads`, `missingRoot`
   * (a root that no longer exists: list, drop, prune, gc, fsck), `config`
   * (false: ignore .decree/config.yml).
   */
  static async open(options) {
    const o = opts(options, 'Store.open');
    if (typeof o.root !== 'string') throw new TypeError('Store.open: root must be a string');
    const n = new native.NativeStore();
    const info = await n.open(o);
    return new Store(n, info);
  }

  // Queue a call behind the ones before it on this store.
  // A DecreeError made on the main thread after the worker finished has
  // no JavaScript frames: it gets those of the call that queued it.
  #run(fn) {
    if (this.#closed) return Promise.reject(invalid('the store is closed'));
    const at = {};
    Error.captureStackTrace(at, this.#run);
    const p = this.#tail.then(() => fn(this.#native)).catch((e) => {
      if (e instanceof DecreeError && typeof at.stack === 'string')
        e.stack = `${e.name}: ${e.message}${at.stack.slice(at.stack.indexOf('\n'))}`;
      throw e;
    });
    this.#tail = p.then(() => {}, () => {});
    return p;
  }

  #cancellable(o, fn) {
    const [o2, done] = withCancel(o);
    const p = this.#run((n) => fn(n, o2));
    return done ? p.finally(done) : p;
  }

  /** Close the handle once the calls made before have finished. */
  close() {
    if (this.#closed) return this.#tail;
    const p = this.#run((n) => n.close());
    this.#closed = true;
    return p;
  }

  /** Checkpoint the working tree. */
  checkpoint(options) {
    const o = opts(options, 'checkpoint');
    return this.#run((n) => n.create(o));
  }

  /** The checkpoints of this root, oldest first.  `hasChanges` (default
   *  true) computes whether each differs from the next (the last: from
   *  the working tree). */
  async list(options) {
    const o = opts(options, 'list');
    const r = await this.#run((n) => n.list(o));
    const list = r.checkpoints;
    Object.defineProperty(list, 'damaged', { value: r.damaged, enumerable: false });
    return list;
  }

  /** A full checkpoint id from a reference (id, unique prefix, S:M). */
  resolve(ref) {
    return this.#run((n) => n.resolve(ref));
  }

  /** A checkpoint and its files. */
  show(ref) {
    return this.#run((n) => n.show(ref));
  }

  /** Per-file diff of `ref` against the working tree (ref2 null) or
   *  checkpoint `ref2`: status, modes, line counts and the record text. */
  diff(ref, ref2 = null, options) {
    const o = opts(options, 'diff');
    return this.#run((n) => n.diff(ref, ref2, o));
  }

  /** The whole diff as one text (the records of diff(), in order). */
  async diffText(ref, ref2 = null, options) {
    const files = await this.diff(ref, ref2, { ...opts(options, 'diffText'), noText: false });
    return files.map((f) => f.text ?? '').join('');
  }

  /** The paths that differ, each with A/D/M (no contents read). */
  compare(ref, ref2 = null) {
    return this.#run((n) => n.compare(ref, ref2));
  }

  /** Cascading restore of a checkpoint (`paths`, `dryRun`, `agentOnly`,
   *  `signal`); the tree before is captured and undo() brings it back. */
  restore(ref, options) {
    return this.#cancellable(opts(options, 'restore'), (n, o) => n.restore(ref, o));
  }

  /** The checkpoints as `decree rollback` numbers them, newest first:
   *  the user's 1, 2, ...; decree's captures u1, u2, ...; with
   *  filesDiffer (against the working tree). */
  rollbackList(options) {
    const o = opts(options, 'rollbackList');
    return this.#run((n) => n.rollbackList(o));
  }

  /** Restore rollback number `n` (1, 2, ... or "u1" for a capture). */
  rollback(num, options) {
    const ref = typeof num === 'number' ? String(num) : num;
    if (typeof ref !== 'string' || !/^u?[1-9][0-9]*$/.test(ref))
      return Promise.reject(invalid(`bad rollback number '${num}' (N >= 1, or uN)`));
    return this.#cancellable(opts(options, 'rollback'), (n, o) => n.rollback(ref, o));
  }

  /** Undo the last restore, apply or revert. */
  undo(options) {
    return this.#cancellable(opts(options, 'undo'), (n, o) => n.undoRedo(true, o));
  }

  /** Redo what undo() undid. */
  redo(options) {
    return this.#cancellable(opts(options, 'redo'), (n, o) => n.undoRedo(false, o));
  }

  /** Drop damaged entries of the undo/redo history. */
  dropDamagedHistory() {
    return this.#run((n) => n.dropDamagedHistory());
  }

  /** Delete old checkpoint records: `keep` the newest N and/or keep those
   *  younger than `olderThanDays` (`session`: one session). */
  prune(options) {
    const o = opts(options, 'prune');
    if (o.keep === undefined && o.olderThanDays === undefined)
      return Promise.reject(invalid('prune needs keep or olderThanDays'));
    return this.#run((n) => n.prune(o));
  }

  /** Delete a session's records ({session}) or every record and the
   *  undo history of this root ({all: true}). */
  drop(options) {
    const o = opts(options, 'drop');
    if ((o.session === undefined) === (o.all !== true))
      return Promise.reject(invalid('drop needs {session} or {all: true}'));
    return this.#run((n) => n.drop(o.all === true ? null : o.session));
  }

  /** Delete one checkpoint record. */
  delete(ref) {
    return this.#run((n) => n.delete(ref));
  }

  /** Apply a unified diff as one transaction (`check`, `reverse`,
   *  `strip`, `exec`, `session`, `name`, `signal`).  A conflict rejects
   *  with code "conflict" and the per-path report in `error.files`. */
  apply(patch, options) {
    return this.#cancellable(opts(options, 'apply'), (n, o) => n.apply(patch, o));
  }

  /** Delete unreferenced objects (`dryRun`: only count them). */
  gc(options) {
    const o = opts(options, 'gc');
    return this.#run((n) => n.gc(o));
  }

  /** Verify the store ({repair}); {ok, problems}. */
  fsck(options) {
    const o = opts(options, 'fsck');
    return this.#run((n) => n.fsck(o));
  }

  /** Finish or roll back an interrupted transaction ({rollback} for a
   *  damaged log). */
  recover(options) {
    const o = opts(options, 'recover');
    return this.#run((n) => n.recover(o));
  }

  // --- agent sessions (decree/agent.h) ---------------------------------

  /** Start a turn of an agent session (checkpoint + journal). */
  agentTurn(options) {
    const o = opts(options, 'agentTurn');
    return this.#run((n) => n.agentTurn(o));
  }

  /** A tool whose writes are unknown is about to run. */
  agentToolStart(session, tool = null, toolId = null) {
    return this.#run((n) => n.agentToolStart(session, tool, toolId));
  }

  /** A tool changed these paths: journal what they hold now. */
  agentRecordPaths(session, tool, paths) {
    return this.#run((n) => n.agentRecordPaths(session, tool ?? null, paths));
  }

  /** A tool whose writes are unknown finished: journal what it changed. */
  agentRecordScan(session, tool = null, toolId = null) {
    return this.#run((n) => n.agentRecordScan(session, tool, toolId));
  }

  /** The agent sessions of this root, most recent last. */
  agentSessions() {
    return this.#run((n) => n.agentSessions());
  }

  /** The turns of an agent session (null: the most recent session). */
  rewindList(session = null) {
    return this.#run((n) => n.rewindList(session));
  }

  /** Restore to before turn `turn` (`session`, `agentOnly`, `dryRun`,
   *  `paths`, `signal`). */
  rewind(turn, options) {
    return this.#cancellable(opts(options, 'rewind'), (n, o) => n.rewind(turn, o));
  }

  // --- workspaces (decree/workspace.h, docs/workspaces.md) -------------

  /** Make a workspace: a copy of the project's scanned tree in
   *  <store>/workspaces/NAME (`name`: default ws-1, ws-2, ...; `from`: the
   *  base checkpoint, default a new one of the project now; `noReflink`:
   *  always copy).  Resolves with its info: path, base, mode,
   *  reflinkVerified and the copy counts. */
  workspaceCreate(options) {
    const o = opts(options, 'workspaceCreate');
    return this.#run((n) => n.workspaceCreate(o));
  }

  /** The workspaces of this project, by name. */
  workspaceList() {
    return this.#run((n) => n.workspaceList());
  }

  /** One workspace (code "not_found" if there is none by that name). */
  workspaceGet(name) {
    return this.#run((n) => n.workspaceGet(name));
  }

  /** The absolute directory of a workspace. */
  async workspacePath(name) {
    return (await this.workspaceGet(name)).path;
  }

  /** The workspace's changes: its base checkpoint against its files now,
   *  the same records as diff(). */
  workspaceDiff(name, options) {
    const o = opts(options, 'workspaceDiff');
    return this.#run((n) => n.workspaceDiff(name, o));
  }

  /** The workspace's changes as one text. */
  async workspaceDiffText(name, options) {
    const files = await this.workspaceDiff(name, { ...opts(options, 'workspaceDiffText'), noText: false });
    return files.map((f) => f.text ?? '').join('');
  }

  /** What applying the workspace now would find, writing nothing:
   *  {clean, files, changes, conflicts, report}.  Conflicts resolve
   *  (clean false), they do not reject. */
  workspaceConflicts(name) {
    return this.#run((n) => n.workspaceConflicts(name));
  }

  /** Carry the workspace's changes onto the project as it is now, merged
   *  path by path (`check`, `exec`, `session`, `signal`), as one
   *  transaction undo() reverts.  A conflict rejects with code "conflict"
   *  and the per-path report in `error.files`; nothing is written. */
  workspaceApply(name, options) {
    return this.#cancellable(opts(options, 'workspaceApply'), (n, o) => n.workspaceApply(name, o));
  }

  /** Remove a workspace after capturing it; resolves with {capture} (the
   *  capture's id).  undo() makes it again (a "workspace" notice in its
   *  result), redo() discards it again. */
  workspaceDiscard(name) {
    return this.#run((n) => n.workspaceDiscard(name));
  }
}

/** Open a store: Store.open(options). */
export function open(options) {
  return Store.open(options);
}
