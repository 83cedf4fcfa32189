// Checkpoints through the Node package, on real files in temp projects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, chmodSync, rmSync, symlinkSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Store, DecreeError, version } from '../index.js';
import { tempProject, writeTree, picture } from './helpers.mjs';

async function openProject(t, files) {
  const p = tempProject(t);
  writeTree(p.root, files);
  const store = await Store.open({ root: p.root });
  t.after(() => store.close());
  return { ...p, store };
}

test('version is the library version', () => {
  assert.match(version, /^\d+\.\d+\.\d+/);
});

test('checkpoint, then list says whether the tree changed since', async (t) => {
  const { root, store } = await openProject(t, { 'a.txt': 'one\n', 'src/b.c': 'int b;\n' });
  const c = await store.checkpoint({ session: 'chat', message: 'turn-1', label: 'first' });
  assert.match(c.id, /^[0-9a-f]{64}$/);
  assert.match(c.tree, /^[0-9a-f]{64}$/);
  assert.equal(c.created, true);
  let list = await store.list();
  assert.equal(list.length, 1);
  assert.deepEqual([list[0].id, list[0].session, list[0].message, list[0].label],
    [c.id, 'chat', 'turn-1', 'first']);
  assert.equal(list[0].fileCount, 2);
  assert.equal(list[0].hasChanges, false);
  assert.equal(list[0].capture, false);
  assert.equal(typeof list[0].createdNs, 'bigint');
  assert.match(list[0].createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

  writeFileSync(join(root, 'a.txt'), 'two\n');
  list = await store.list();
  assert.equal(list[0].hasChanges, true);
  assert.deepEqual(list.damaged, []);
  list = await store.list({ hasChanges: false });
  assert.equal('hasChanges' in list[0], false);
});

test('one checkpoint per (session, message); ifChanged makes none for an equal tree', async (t) => {
  const { root, store } = await openProject(t, { 'a.txt': 'one\n' });
  const c1 = await store.checkpoint({ session: 's', message: 'm' });
  const again = await store.checkpoint({ session: 's', message: 'm' });
  assert.equal(again.created, false);
  assert.equal(again.id, c1.id);
  assert.equal(again.notices[0].kind, 'existing');
  const same = await store.checkpoint({ session: 's', ifChanged: true });
  assert.equal(same.created, false);
  assert.equal(same.id, c1.id);
  writeFileSync(join(root, 'a.txt'), 'changed\n');
  const c2 = await store.checkpoint({ session: 's', ifChanged: true });
  assert.equal(c2.created, true);
  assert.notEqual(c2.tree, c1.tree);
  assert.equal(c2.filesChanged, 1);
  assert.equal((await store.list({ session: 's' })).length, 2);
  assert.equal((await store.list({ session: 'other' })).length, 0);
});

test('excludes and maxFileSize are kept in the checkpoint', async (t) => {
  const { root, store } = await openProject(t, {
    'keep.txt': 'k\n', 'build/out.o': 'obj', 'big.bin': Buffer.alloc(4096, 7),
  });
  const c = await store.checkpoint({ excludes: ['build/'], maxFileSize: 1024 });
  const shown = await store.show(c.id);
  const paths = shown.files.map((f) => f.path);
  assert.deepEqual(paths.sort(), ['big.bin', 'keep.txt']);
  const big = shown.files.find((f) => f.path === 'big.bin');
  assert.equal(big.sha256, null);
  assert.ok(big.skipReason);
  assert.ok(c.notices.some((n) => n.kind === 'too_large' && n.path === 'big.bin'));
  // a restore never deletes what the checkpoint excluded
  writeFileSync(join(root, 'build/new.o'), 'x');
  await store.restore(c.id);
  assert.ok(existsSync(join(root, 'build/new.o')));
  assert.ok(existsSync(join(root, 'build/out.o')));
});

test('restore is exact: bytes, modes, symlinks; files made after are deleted', async (t) => {
  const files = {
    'text.txt': 'line 1\nline 2\n',
    'crlf.txt': 'a\r\nb\r\n',
    'nonl.txt': 'no final newline',
    'empty': '',
    'bin.dat': Buffer.from([0, 1, 2, 255, 0, 10, 13]),
    'latin1.txt': Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]),
    'secret.key': { data: 'hunter2\n', mode: 0o600 },
    'run.sh': { data: '#!/bin/sh\necho hi\n', mode: 0o755 },
    'dir/deep/f.txt': 'deep\n',
    'link-to-text': { link: 'text.txt' },
    'dangling': { link: 'does/not/exist' },
  };
  const { root, store } = await openProject(t, files);
  const before = picture(root);
  const c = await store.checkpoint({ label: 'good' });

  writeFileSync(join(root, 'text.txt'), 'changed\n');
  writeFileSync(join(root, 'bin.dat'), Buffer.from([9, 9, 9]));
  rmSync(join(root, 'crlf.txt'));
  chmodSync(join(root, 'secret.key'), 0o644);
  chmodSync(join(root, 'run.sh'), 0o644);
  rmSync(join(root, 'link-to-text'));
  symlinkSync('nonl.txt', join(root, 'link-to-text'));
  rmSync(join(root, 'dir'), { recursive: true });
  writeFileSync(join(root, 'new.txt'), 'made after the checkpoint\n');
  const after = picture(root);
  assert.notDeepEqual(after, before);

  const dry = await store.restore(c.id, { dryRun: true });
  assert.deepEqual(picture(root), after, 'a dry run changes nothing');
  const plan = Object.fromEntries(dry.plan.map((p) => [p.path, p.action]));
  assert.equal(plan['new.txt'], 'delete');
  assert.equal(plan['crlf.txt'], 'create');
  assert.equal(plan['text.txt'], 'restore');
  assert.equal(plan['dir/deep/f.txt'], 'create');

  const r = await store.restore(c.id);
  assert.deepEqual(picture(root), before);
  assert.equal(r.deleted, 1);
  assert.ok(r.created >= 2);
  assert.match(r.preCheckpoint, /^[0-9a-f]{64}$/);
  assert.equal(statSync(join(root, 'secret.key')).mode & 0o777, 0o600);

  // the capture made before the restore is listed as one
  const list = await store.list({ hasChanges: false });
  assert.ok(list.some((x) => x.id === r.preCheckpoint && x.capture && x.label === 'pre-restore'));
});

test('restore of some paths only', async (t) => {
  const { root, store } = await openProject(t, { 'a': '1\n', 'b': '1\n' });
  const c = await store.checkpoint();
  writeFileSync(join(root, 'a'), '2\n');
  writeFileSync(join(root, 'b'), '2\n');
  const r = await store.restore(c.id, { paths: ['a'] });
  assert.equal(r.restored, 1);
  assert.equal(readFileSync(join(root, 'a'), 'utf8'), '1\n');
  assert.equal(readFileSync(join(root, 'b'), 'utf8'), '2\n');
});

test('undo brings back what a restore replaced, redo does it again', async (t) => {
  const { root, store } = await openProject(t, { 'f.txt': 'v1\n', 'g.txt': 'keep\n' });
  const c = await store.checkpoint();
  writeTree(root, { 'f.txt': 'v2\n', 'h.txt': 'new\n', 'x': { data: 'x\n', mode: 0o700 } });
  const edited = picture(root);
  await store.restore(c.id);
  assert.equal(existsSync(join(root, 'h.txt')), false);
  const restored = picture(root);
  const u = await store.undo();
  assert.deepEqual(picture(root), edited);
  assert.ok(u.restored + u.created >= 3);
  await store.redo();
  assert.deepEqual(picture(root), restored);
  await store.undo();
  await store.undo().then(
    () => assert.fail('nothing left to undo'),
    (e) => { assert.ok(e instanceof DecreeError); assert.equal(e.code, 'not_found'); });
  assert.deepEqual(picture(root), edited);
});

test('diff, diffText and compare', async (t) => {
  const { root, store } = await openProject(t, { 'a.txt': 'one\ntwo\n', 'gone.txt': 'bye\n' });
  const c = await store.checkpoint();
  writeFileSync(join(root, 'a.txt'), 'one\nTWO\n');
  rmSync(join(root, 'gone.txt'));
  writeFileSync(join(root, 'new.bin'), Buffer.from([0, 1, 2]));
  const files = await store.diff(c.id);
  const by = Object.fromEntries(files.map((f) => [f.path, f]));
  assert.deepEqual(Object.keys(by).sort(), ['a.txt', 'gone.txt', 'new.bin']);
  assert.equal(by['a.txt'].status, 'M');
  assert.equal(by['a.txt'].added, 1);
  assert.equal(by['a.txt'].removed, 1);
  assert.match(by['a.txt'].text, /^diff --git a\/a.txt b\/a.txt\n/);
  assert.match(by['a.txt'].text, /\n-two\n\+TWO\n/);
  assert.equal(by['gone.txt'].status, 'D');
  assert.equal(by['new.bin'].binary, true);
  assert.equal(by['new.bin'].oldMode, 0);
  assert.equal(by['new.bin'].newMode, 0o644);
  const text = await store.diffText(c.id);
  assert.equal(text, files.map((f) => f.text).join(''));
  const noText = await store.diff(c.id, null, { noText: true, paths: ['a.txt'] });
  assert.deepEqual(noText.map((f) => [f.path, f.text]), [['a.txt', null]]);
  const cmp = await store.compare(c.id);
  assert.deepEqual(cmp.map((x) => `${x.status} ${x.path}`).sort(), ['A new.bin', 'D gone.txt', 'M a.txt']);
  const c2 = await store.checkpoint();
  assert.deepEqual((await store.compare(c.id, c2.id)).length, 3);
  assert.deepEqual(await store.compare(c2.id), []);
});

test('show lists files with sha256, size and mode', async (t) => {
  const { store } = await openProject(t, { 'x.sh': { data: 'abc', mode: 0o755 }, 'l': { link: 'x.sh' } });
  const c = await store.checkpoint({ session: 'S', message: 'M' });
  const s = await store.show('S:M');
  assert.equal(s.checkpoint.id, c.id);
  const x = s.files.find((f) => f.path === 'x.sh');
  assert.equal(x.sha256, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(x.size, 3);
  assert.equal(x.mode, 0o755);
  assert.equal(s.files.find((f) => f.path === 'l').mode, 0o120000);
  assert.equal(await store.resolve(c.id.slice(0, 8)), c.id);
});

test('rollbackList numbers checkpoints newest first, captures apart; rollback N restores', async (t) => {
  const { root, store } = await openProject(t, { 'f': '1\n' });
  const c1 = await store.checkpoint({ label: 'one' });
  writeFileSync(join(root, 'f'), '2\n');
  const c2 = await store.checkpoint({ label: 'two' });
  writeFileSync(join(root, 'f'), '3\n');
  let rl = await store.rollbackList();
  assert.deepEqual(rl.map((e) => [e.ref, e.n, e.id, e.filesDiffer]), [['1', 1, c2.id, 1], ['2', 2, c1.id, 1]]);
  const r = await store.rollback(2);
  assert.equal(readFileSync(join(root, 'f'), 'utf8'), '1\n');
  rl = await store.rollbackList();
  assert.deepEqual(rl.map((e) => e.ref), ['u1', '1', '2']);
  assert.equal(rl[0].kind, 'capture');
  assert.equal(rl[0].n, null);
  assert.equal(rl[0].id, r.preCheckpoint);
  await store.rollback('u1');
  assert.equal(readFileSync(join(root, 'f'), 'utf8'), '3\n');
  await assert.rejects(store.rollback(9), (e) => e instanceof DecreeError && e.code === 'not_found' &&
    e.message === 'no checkpoint number 9 (there are 2)');
  await assert.rejects(store.rollback(0), (e) => e.code === 'invalid');
});

test('prune, delete, drop and gc', async (t) => {
  const { root, store } = await openProject(t, { 'f': '0\n' });
  const ids = [];
  for (let i = 1; i <= 4; i++) {
    writeFileSync(join(root, 'f'), `${i}\n`);
    ids.push((await store.checkpoint({ session: 'a' })).id);
  }
  await store.checkpoint({ session: 'b' });
  const p = await store.prune({ session: 'a', keep: 2 });
  assert.equal(p.removed, 2);
  assert.deepEqual((await store.list({ session: 'a' })).map((c) => c.id), ids.slice(2));
  await store.delete(ids[2]);
  await assert.rejects(store.show(ids[2]), (e) => e.code === 'not_found');
  const g1 = await store.gc({ dryRun: true });
  assert.ok(g1.objectsFreed > 0);
  const g = await store.gc();
  assert.equal(g.objectsFreed, g1.objectsFreed);
  assert.equal((await store.gc({ dryRun: true })).objectsFreed, 0);
  await assert.rejects(store.drop(), (e) => e.code === 'invalid');
  assert.equal((await store.drop({ session: 'b' })).removed, 1);
  assert.equal((await store.drop({ all: true })).removed, 1);
  assert.equal((await store.list()).length, 0);
  await assert.rejects(store.prune({}), (e) => e.code === 'invalid');
  const f = await store.fsck();
  assert.deepEqual(f, { ok: true, problems: [] });
});

test('fsck reports a damaged object', async (t) => {
  const { store, root } = await openProject(t, { 'f': 'some content that is stored\n' });
  await store.checkpoint();
  const { readdirSync, writeFileSync: wf } = await import('node:fs');
  const packs = join(store.storePath);
  // damage every pack file's last byte
  const walk = (d) => readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]);
  const victims = walk(packs).filter((p) => /pack/.test(p) && !/\.idx$/.test(p));
  assert.ok(victims.length > 0, `no pack in ${walk(packs).join(' ')}`);
  for (const v of victims) {
    const b = readFileSync(v);
    b[b.length - 1] ^= 0xff;
    wf(v, b);
  }
  const f = await store.fsck();
  assert.equal(f.ok, false);
  assert.ok(f.problems.length > 0);
  assert.equal(f.problems[0].kind, 'damaged');
  assert.ok(root);
});
