// apply, agent turns and rewind, errors and concurrency through the Node
// package, on real files in temp projects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Store, DecreeError, open } from '../index.js';
import { tempProject, writeTree, picture } from './helpers.mjs';

async function openProject(t, files) {
  const p = tempProject(t);
  writeTree(p.root, files);
  const store = await Store.open({ root: p.root });
  t.after(() => store.close());
  return { ...p, store };
}

const PATCH = `diff --git a/hello.txt b/hello.txt
--- a/hello.txt
+++ b/hello.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
diff --git a/added.txt b/added.txt
new file mode 100644
--- /dev/null
+++ b/added.txt
@@ -0,0 +1 @@
+added by the patch
`;

test('apply a patch, check it first, undo it, apply it reversed', async (t) => {
  const { root, store } = await openProject(t, { 'hello.txt': 'one\ntwo\nthree\n' });
  const before = picture(root);
  const check = await store.apply(PATCH, { check: true });
  assert.equal(check.check, true);
  assert.deepEqual(check.files.map((f) => `${f.action} ${f.path}`).sort(),
    ['create added.txt', 'modify hello.txt']);
  assert.deepEqual(picture(root), before, '--check writes nothing');

  const r = await store.apply(PATCH, { name: 'fix.diff' });
  assert.equal(r.modified, 1);
  assert.equal(r.created, 1);
  assert.equal(readFileSync(join(root, 'hello.txt'), 'utf8'), 'one\nTWO\nthree\n');
  assert.equal(readFileSync(join(root, 'added.txt'), 'utf8'), 'added by the patch\n');
  const after = picture(root);

  await store.undo();
  assert.deepEqual(picture(root), before);
  await store.redo();
  assert.deepEqual(picture(root), after);

  const rev = await store.apply(Buffer.from(PATCH), { reverse: true });
  assert.equal(rev.deleted, 1);
  assert.deepEqual(picture(root), before);
});

test('a patch that does not apply rejects with code conflict and writes nothing', async (t) => {
  const { root, store } = await openProject(t, { 'hello.txt': 'one\nsomething else\nthree\n' });
  const before = picture(root);
  await assert.rejects(store.apply(PATCH), (e) => {
    assert.ok(e instanceof DecreeError);
    assert.equal(e.code, 'conflict');
    assert.equal(e.errno, -6);
    const hello = e.files.find((f) => f.path === 'hello.txt');
    assert.equal(hello.action, 'conflict');
    assert.ok(hello.detail);
    return true;
  });
  assert.deepEqual(picture(root), before);
  await assert.rejects(store.apply('this is not a patch\n'), (e) => e.code === 'invalid');
  await assert.rejects(store.apply(42), TypeError);
});

test('apply with exec: a failing command rolls everything back', async (t) => {
  const { root, store } = await openProject(t, { 'hello.txt': 'one\ntwo\nthree\n' });
  const before = picture(root);
  await assert.rejects(store.apply(PATCH, { exec: 'touch stray && exit 3' }), (e) => {
    assert.equal(e.code, 'exec');
    assert.equal(e.execStatus, 3);
    return true;
  });
  assert.deepEqual(picture(root), before);
  const ok = await store.apply(PATCH, { exec: 'grep -q TWO hello.txt' });
  assert.equal(ok.execRan, true);
  assert.equal(ok.execStatus, 0);
});

test('errors are DecreeErrors with decree\'s code', async (t) => {
  const { dir, store } = await openProject(t, { 'a': 'a\n' });
  await store.checkpoint();
  await assert.rejects(store.show('zz'), (e) => e instanceof DecreeError && e.code === 'invalid' &&
    /invalid checkpoint reference 'zz'/.test(e.message));
  await assert.rejects(store.restore('abcdef0123'), (e) => e.code === 'not_found' && e.errno === -3 &&
    e.stack.startsWith('DecreeError: no checkpoint matches') && e.stack.includes('apply-agent.test.mjs'));
  await assert.rejects(store.diff('nosuch:message'), (e) => e.code === 'not_found');
  await assert.rejects(store.rewindList(), (e) => e.code === 'not_found');
  await assert.rejects(Store.open({ root: join(dir, 'missing') }), (e) => e instanceof DecreeError);
  await assert.rejects(store.checkpoint({ session: 'bad\nname' }), (e) => e.code === 'invalid');
  await assert.rejects(store.show('a\0b'), (e) => e.code === 'invalid');
  await assert.rejects(store.checkpoint({ label: 5 }), TypeError);
  assert.throws(() => new Store({}, {}), TypeError);
});

test('a closed store refuses calls; close waits for the calls before it', async (t) => {
  const { root } = tempProject(t);
  writeFileSync(join(root, 'f'), 'x\n');
  const s = await open({ root });
  const pending = s.checkpoint();
  const closing = s.close();
  const c = await pending;
  assert.equal(c.created, true);
  await closing;
  await assert.rejects(s.list(), (e) => e instanceof DecreeError && e.code === 'invalid');
  await s.close();
});

test('agent turns, the journal and rewind agent-only keep the user\'s edits', async (t) => {
  const { root, store } = await openProject(t, { 'app.js': 'v0\n', 'notes.md': 'mine\n' });
  const t1 = await store.agentTurn({ session: 'sess-1', agent: 'claude-code', message: 'p1', prompt: 'fix the bug\nplease' });
  assert.deepEqual([t1.turn, t1.started], [1, true]);
  const again = await store.agentTurn({ session: 'sess-1', message: 'p1' });
  assert.deepEqual([again.turn, again.started, again.checkpoint], [1, false, t1.checkpoint]);

  // the agent edits two files (a tool that names them) ...
  writeFileSync(join(root, 'app.js'), 'v1 by agent\n');
  writeFileSync(join(root, 'notes.md'), 'agent notes\n');
  const rec = await store.agentRecordPaths('sess-1', 'Edit', ['app.js', 'notes.md']);
  assert.equal(rec.recorded, 2);
  // ... and a shell command creates one
  await store.agentToolStart('sess-1', 'Bash', 'tool-1');
  mkdirSync(join(root, 'gen'));
  writeFileSync(join(root, 'gen/out.txt'), 'generated\n');
  const scan = await store.agentRecordScan('sess-1', 'Bash', 'tool-1');
  assert.ok(scan.changed >= 1); // gen/out.txt, and maybe files changed in the same clock tick
  // then the user edits notes.md after the agent
  writeFileSync(join(root, 'notes.md'), 'user edit after the agent\n');

  const sessions = await store.agentSessions();
  assert.deepEqual(sessions.map((s) => [s.session, s.agent, s.turns]), [['sess-1', 'claude-code', 1]]);
  const rl = await store.rewindList();
  assert.equal(rl.session, 'sess-1');
  assert.equal(rl.turns.length, 1);
  assert.equal(rl.turns[0].prompt, 'fix the bug');
  assert.equal(rl.turns[0].checkpoint, t1.checkpoint);
  assert.deepEqual(rl.turns[0].files, ['app.js', 'gen/out.txt', 'notes.md']);

  const dry = await store.rewind(1, { agentOnly: true, dryRun: true });
  const plan = Object.fromEntries(dry.plan.map((p) => [p.path, p.action]));
  assert.deepEqual(plan, { 'app.js': 'restore', 'gen/out.txt': 'delete', 'notes.md': 'skip-user-edit' });
  assert.equal(readFileSync(join(root, 'app.js'), 'utf8'), 'v1 by agent\n');

  const r = await store.rewind(1, { agentOnly: true });
  assert.equal(r.skippedUserEdits, 1);
  assert.equal(readFileSync(join(root, 'app.js'), 'utf8'), 'v0\n');
  assert.equal(existsSync(join(root, 'gen/out.txt')), false);
  assert.equal(readFileSync(join(root, 'notes.md'), 'utf8'), 'user edit after the agent\n');

  // restore agent-only of the turn's checkpoint is the same operation
  await store.undo();
  assert.equal(readFileSync(join(root, 'app.js'), 'utf8'), 'v1 by agent\n');
  const r2 = await store.restore(t1.checkpoint, { agentOnly: true });
  assert.equal(r2.skippedUserEdits, 1);
  assert.equal(readFileSync(join(root, 'app.js'), 'utf8'), 'v0\n');
  await assert.rejects(store.rewind(5, { session: 'sess-1' }), (e) => e.code === 'not_found');
  await assert.rejects(store.rewind(0), RangeError);
});

test('an aborted signal cancels a restore: nothing changes', async (t) => {
  const { root, store } = await openProject(t, { 'f': '1\n' });
  const c = await store.checkpoint();
  writeFileSync(join(root, 'f'), '2\n');
  const before = picture(root);
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(store.restore(c.id, { signal: ac.signal }), (e) => e.code === 'cancelled');
  assert.deepEqual(picture(root), before);
  await store.restore(c.id, { signal: new AbortController().signal });
  assert.equal(readFileSync(join(root, 'f'), 'utf8'), '1\n');
});

test('calls run off the main thread: the event loop turns while one runs', async (t) => {
  const files = {};
  for (let i = 0; i < 3000; i++) files[`d${i % 30}/f${i}.txt`] = `file ${i}\n`.repeat(20);
  const { store } = await openProject(t, files);
  let turns = 0, done = false;
  const spin = () => { if (!done) { turns++; setImmediate(spin); } };
  setImmediate(spin);
  const c = await store.checkpoint();
  done = true;
  assert.equal(c.created, true);
  assert.ok(turns > 0, `the event loop turned ${turns} times during the checkpoint`);
});

test('many calls in flight: one store runs them in order, several stores in parallel', async (t) => {
  const projects = [];
  for (let k = 0; k < 4; k++) {
    const files = {};
    for (let i = 0; i < 50; i++) files[`f${i}`] = `project ${k} file ${i}\n`;
    projects.push(await openProject(t, files));
  }
  // per store: checkpoint, edit, checkpoint, list, restore, list, all
  // started at once without awaiting in between
  const runs = projects.map(async ({ root, store }, k) => {
    const first = store.checkpoint({ session: 'c', message: 'm1' });
    const second = first.then(() => {
      writeFileSync(join(root, 'f0'), `changed ${k}\n`);
      return store.checkpoint({ session: 'c', message: 'm2' });
    });
    const calls = [first, second, store.list({ session: 'c' }), store.show('c:m1'),
      store.compare('c:m1'), store.resolve('c:m1')];
    const [c1, c2] = await Promise.all([first, second]);
    const [, , , , , id] = await Promise.all(calls);
    assert.equal(id, c1.id);
    const list = await store.list({ session: 'c' });
    assert.deepEqual(list.map((c) => c.id), [c1.id, c2.id]);
    const [r, after] = await Promise.all([store.restore(c1.id), store.list({ session: 'c' })]);
    assert.equal(r.restored, 1);
    assert.equal(after.at(-1).hasChanges, true, 'the list queued after the restore sees it');
    assert.equal(readFileSync(join(root, 'f0'), 'utf8'), `project ${k} file 0\n`);
  });
  await Promise.all(runs);
  // two handles on one project at once: the store lock serialises them
  const { root } = projects[0];
  const other = await Store.open({ root });
  t.after(() => other.close());
  const made = await Promise.all([0, 1, 2, 3].map((i) =>
    (i % 2 ? other : projects[0].store).checkpoint({ session: 'two', message: `m${i}` })));
  assert.equal(new Set(made.map((c) => c.id)).size, 4);
  assert.equal((await other.list({ session: 'two' })).length, 4);
});
