// Workspaces through the Node package (decree/workspace.h), on real files
// in temp projects: the copy is exact, a workspace edit shows in its diff,
// apply merges it with the project's own edits, an overlapping edit is a
// conflict that writes nothing, discard is undone by undo (its notice).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Store, DecreeError } from '../index.js';
import { tempProject, writeTree, picture } from './helpers.mjs';

const LINES = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`);

const TREE = {
  'main.js': 'console.log("hello")\n',
  'README.md': '# Project\n',
  'src/util.js': 'export const f = () => 1;\n',
  'run.sh': { data: '#!/bin/sh\necho run\n', mode: 0o755 },
  'private.txt': { data: 'secret\n', mode: 0o600 },
  'empty': '',
  'deep/er/leaf.txt': 'leaf\n',
  'link': { link: 'src/util.js' },
  'text.txt': LINES.join(''),
};

async function openProject(t, files = TREE) {
  const p = tempProject(t);
  writeTree(p.root, files);
  const store = await Store.open({ root: p.root });
  t.after(() => store.close());
  return { ...p, store };
}

const read = (p) => readFileSync(p, 'utf8');

test('workspaceCreate makes an exact copy and says how', async (t) => {
  const { root, store } = await openProject(t);
  const before = picture(root);
  const ws = await store.workspaceCreate();
  assert.equal(ws.name, 'ws-1');
  assert.equal(ws.path, join(store.storePath, 'workspaces', 'ws-1'));
  assert.equal(ws.project, store.root);
  assert.match(ws.base, /^[0-9a-f]{64}$/);
  assert.equal(await store.resolve(ws.base), ws.base, 'the base is a checkpoint of the project');
  assert.equal((await store.show(ws.base)).checkpoint.tree, ws.baseTree);
  assert.equal(typeof ws.createdNs, 'bigint');
  assert.ok(['reflink', 'copy', 'mixed'].includes(ws.mode));
  assert.equal(ws.reflinkVerified, ws.mode === 'reflink');
  const regular = Object.entries(before).filter(([, v]) => v.startsWith('file '));
  const { cloned, copied, fromStore, links, dirs, bytes } = ws.copy;
  assert.equal(cloned + copied + fromStore, regular.length);
  assert.equal(links, 1);
  assert.ok(dirs >= 3, `dirs ${dirs}`);
  assert.equal(bytes, regular.reduce((n, [, v]) => n + (v.split(' ')[2].length / 2), 0));
  assert.deepEqual(picture(ws.path), before, 'bytes, modes and symlinks');
  assert.deepEqual(picture(root), before, 'the project is untouched');

  const plain = await store.workspaceCreate({ name: 'plain', noReflink: true });
  assert.equal(plain.mode, 'copy');
  assert.equal(plain.copy.cloned, 0);
  assert.equal(plain.reflinkVerified, false);
  assert.deepEqual(picture(plain.path), before);

  // from an older checkpoint
  const old = await store.checkpoint({ session: 's', message: 'old' });
  const oldPic = picture(root);
  writeFileSync(join(root, 'main.js'), 'console.log("newer")\n');
  rmSync(join(root, 'empty'));
  const fromOld = await store.workspaceCreate({ name: 'old', from: old.id.slice(0, 12) });
  assert.equal(fromOld.base, old.id);
  assert.deepEqual(picture(fromOld.path), oldPic);
});

test('workspaceList, workspaceGet, workspacePath and their errors', async (t) => {
  const { store } = await openProject(t);
  assert.deepEqual(await store.workspaceList(), []);
  const b = await store.workspaceCreate({ name: 'b-second' });
  const a = await store.workspaceCreate({ name: 'a-first' });
  assert.deepEqual((await store.workspaceList()).map((w) => w.name), ['a-first', 'b-second']);
  assert.deepEqual(await store.workspaceGet('b-second'), b);
  assert.equal(await store.workspacePath('a-first'), a.path);

  await assert.rejects(store.workspaceGet('missing'), (e) =>
    e instanceof DecreeError && e.code === 'not_found' && e.errno === -3 && /missing/.test(e.message));
  await assert.rejects(store.workspaceCreate({ name: 'a-first' }), (e) =>
    e instanceof DecreeError && e.code === 'exists' && e.errno === -4);
  await assert.rejects(store.workspaceCreate({ name: '../escape' }), (e) =>
    e instanceof DecreeError && e.code === 'invalid');
  await assert.rejects(store.workspaceCreate({ from: 'ffffffffffff' }), (e) => e.code === 'not_found');
  await assert.rejects(store.workspaceDiff('missing'), (e) => e.code === 'not_found');
  await assert.rejects(store.workspaceCreate({ noReflink: 'yes' }), TypeError);
  await assert.rejects(store.workspaceGet('a\0b'), (e) => e.code === 'invalid');
});

test('an edit in the workspace shows in workspaceDiff, not in the project', async (t) => {
  const { root, store } = await openProject(t);
  const ws = await store.workspaceCreate({ name: 'w' });
  assert.deepEqual(await store.workspaceDiff('w'), []);
  writeFileSync(join(ws.path, 'main.js'), 'console.log("hello")\nconsole.log("from ws")\n');
  writeFileSync(join(ws.path, 'new.txt'), 'new\n');
  rmSync(join(ws.path, 'README.md'));
  const d = await store.workspaceDiff('w');
  assert.deepEqual(d.map((f) => `${f.status} ${f.path}`), ['D README.md', 'M main.js', 'A new.txt']);
  const m = d.find((f) => f.path === 'main.js');
  assert.equal(m.added, 1);
  assert.equal(m.removed, 0);
  assert.match(m.text, /^\+console\.log\("from ws"\)$/m);
  const text = await store.workspaceDiffText('w');
  assert.equal(text, d.map((f) => f.text).join(''));
  const only = await store.workspaceDiff('w', { noText: true, paths: ['main.js'] });
  assert.deepEqual(only.map((f) => [f.path, f.text]), [['main.js', null]]);
  assert.equal(read(join(root, 'main.js')), 'console.log("hello")\n');
});

test('workspaceApply merges with what changed in the project; undo reverts it', async (t) => {
  const { root, store } = await openProject(t);
  const ws = await store.workspaceCreate({ name: 'w' });
  const theirs = [...LINES];
  theirs[1] = 'line 2 (workspace)\n';
  writeFileSync(join(ws.path, 'text.txt'), theirs.join(''));
  writeFileSync(join(ws.path, 'added.txt'), 'from the workspace\n');
  const ours = [...LINES];
  ours[18] = 'line 19 (project)\n';
  writeFileSync(join(root, 'text.txt'), ours.join(''));
  writeFileSync(join(root, 'main.js'), 'console.log("project")\n');
  const before = picture(root);

  const c = await store.workspaceConflicts('w');
  assert.equal(c.clean, true);
  assert.deepEqual(c.conflicts, []);
  assert.equal(c.changes, 2);
  assert.ok(c.files >= 2);
  const check = await store.workspaceApply('w', { check: true });
  assert.equal(check.check, true);
  assert.deepEqual([check.created, check.modified, check.conflicts], [1, 1, 0]);
  assert.deepEqual(picture(root), before, 'conflicts and check write nothing');

  const r = await store.workspaceApply('w', { session: 'review' });
  assert.deepEqual([r.created, r.modified, r.deleted, r.conflicts], [1, 1, 0, 0]);
  const actions = r.files.map((f) => `${f.action} ${f.path}`);
  assert.ok(actions.includes('create added.txt') && actions.includes('modify text.txt'), actions.join());
  const merged = [...LINES];
  merged[1] = theirs[1];
  merged[18] = ours[18];
  assert.equal(read(join(root, 'text.txt')), merged.join(''));
  assert.equal(read(join(root, 'added.txt')), 'from the workspace\n');
  assert.equal(read(join(root, 'main.js')), 'console.log("project")\n', "the project's own edit stays");

  await store.undo();
  assert.deepEqual(picture(root), before);
  // the same through the CLI: it sees the binding's workspace
  const decree = process.env.DECREE;
  if (decree) {
    const out = execFileSync(decree, ['-C', root, 'workspace', 'list'], { encoding: 'utf8' });
    assert.match(out, /\bw\b/);
  }
});

test('an overlapping edit is a conflict: reported, rejected, nothing written', async (t) => {
  const { root, store } = await openProject(t);
  const ws = await store.workspaceCreate({ name: 'w' });
  writeFileSync(join(ws.path, 'main.js'), 'console.log("workspace")\n');
  writeFileSync(join(ws.path, 'other.txt'), 'would be created\n');
  writeFileSync(join(root, 'main.js'), 'console.log("project")\n');
  const before = picture(root);

  const c = await store.workspaceConflicts('w');
  assert.equal(c.clean, false);
  assert.deepEqual(c.conflicts.map((f) => [f.path, f.action]), [['main.js', 'conflict']]);
  assert.match(c.conflicts[0].detail, /main\.js/);
  assert.ok(c.report.some((f) => f.path === 'other.txt' && f.action === 'create'));

  await assert.rejects(store.workspaceApply('w'), (e) => {
    assert.ok(e instanceof DecreeError);
    assert.equal(e.code, 'conflict');
    assert.equal(e.errno, -6);
    const conf = e.files.filter((f) => f.action === 'conflict');
    assert.deepEqual(conf.map((f) => f.path), ['main.js']);
    assert.ok(conf[0].detail);
    return true;
  });
  assert.deepEqual(picture(root), before, 'nothing written, not even other.txt');
  await assert.rejects(store.undo(), (e) => e.code === 'not_found', 'nothing pushed on the history');
});

test('workspaceApply with exec: a failing command rolls the project back', async (t) => {
  const { root, store } = await openProject(t);
  const ws = await store.workspaceCreate({ name: 'w' });
  writeFileSync(join(ws.path, 'main.js'), 'console.log("workspace")\n');
  const before = picture(root);
  await assert.rejects(store.workspaceApply('w', { exec: 'exit 3' }), (e) =>
    e.code === 'exec' && e.execStatus === 3);
  assert.deepEqual(picture(root), before);
  const r = await store.workspaceApply('w', { exec: 'grep -q workspace main.js' });
  assert.equal(r.execRan, true);
  assert.equal(r.modified, 1);
});

test('workspaceDiscard, then undo brings it back with a workspace notice', async (t) => {
  const { root, store } = await openProject(t);
  const ws = await store.workspaceCreate({ name: 'w' });
  writeFileSync(join(ws.path, 'main.js'), 'console.log("unsaved work")\n');
  writeFileSync(join(ws.path, 'notes.txt'), 'only in the workspace\n');
  const kept = picture(ws.path);
  const project = picture(root);

  const d = await store.workspaceDiscard('w');
  assert.match(d.capture, /^[0-9a-f]{64}$/);
  assert.equal(existsSync(ws.path), false);
  assert.deepEqual(await store.workspaceList(), []);
  await assert.rejects(store.workspaceGet('w'), (e) => e.code === 'not_found');

  const u = await store.undo();
  const ns = u.notices.filter((n) => n.kind === 'workspace');
  assert.equal(ns.length, 1);
  assert.equal(ns[0].label, 'w');
  assert.equal(ns[0].path, ws.path);
  assert.equal(ns[0].count, 1);
  assert.match(ns[0].message, /\bw\b/);
  assert.deepEqual(picture(ws.path), kept, 'the edits are back too');
  assert.equal((await store.workspaceGet('w')).base, ws.base);
  assert.deepEqual(picture(root), project, 'the project untouched');

  const r = await store.redo();
  const n = r.notices.find((x) => x.kind === 'workspace');
  assert.equal(n.count, 0);
  assert.equal(n.label, 'w');
  assert.equal(existsSync(ws.path), false);
  await assert.rejects(store.workspaceDiscard('w'), (e) => e.code === 'not_found');
});
