// The example of README.md runs as written, on a real project, and says
// what the README says it does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { tempProject, writeTree } from './helpers.mjs';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');

test('the README example: checkpoint before a turn, list, rewind agent-only', (t) => {
  const readme = readFileSync(join(pkg, 'README.md'), 'utf8');
  const m = readme.match(/## Example[^\n]*\n+```js\n([\s\S]*?)```/);
  assert.ok(m, 'README.md has the example');
  const code = m[1];
  const lines = code.split('\n').filter((l) => l.trim() && !l.startsWith('import '));
  assert.ok(lines.length <= 10, `the example is ${lines.length} lines`);

  const { dir, root } = tempProject(t);
  writeTree(root, { 'app.js': 'app()\n' });
  const script = join(dir, 'example.mjs');
  writeFileSync(script, code.replace("from 'decree'", `from '${pathToFileURL(join(pkg, 'index.js'))}'`));
  const out = execFileSync(process.execPath, [script, root], { encoding: 'utf8' });
  assert.equal(out, 'add a test changed since\nrewound: 1 deleted, 0 user edits kept\n');
  assert.equal(existsSync(join(root, 'app.test.js')), false);
  assert.equal(readFileSync(join(root, 'app.js'), 'utf8'), 'app()\n');
});

test('the README workspace example: create, edit there, diff, apply, discard', (t) => {
  const readme = readFileSync(join(pkg, 'README.md'), 'utf8');
  const m = readme.match(/## Example: work in a workspace[^\n]*\n+```js\n([\s\S]*?)```/);
  assert.ok(m, 'README.md has the workspace example');
  const code = m[1];
  const lines = code.split('\n').filter((l) => l.trim() && !l.startsWith('import '));
  assert.ok(lines.length <= 10, `the example is ${lines.length} lines`);

  const { dir, root } = tempProject(t);
  writeTree(root, { 'app.js': 'app()\n', 'lib.js': 'lib()\n' });
  const script = join(dir, 'example-ws.mjs');
  writeFileSync(script, code.replace("from 'decree'", `from '${pathToFileURL(join(pkg, 'index.js'))}'`));
  const out = execFileSync(process.execPath, [script, root], { encoding: 'utf8' });
  assert.equal(out, 'M app.js\n');
  assert.equal(readFileSync(join(root, 'app.js'), 'utf8'), 'app({ fixed: true })\n');
  assert.equal(readFileSync(join(root, 'lib.js'), 'utf8'), 'lib()\n');
  assert.equal(existsSync(join(root, '.decree/store/workspaces/try-fix')), false, 'discarded');

  // a project edit of the same line: the example prints the conflict and
  // writes nothing
  const p2 = tempProject(t);
  writeTree(p2.root, { 'app.js': 'app()\n' });
  const edit = code.replace("const { clean",
    "writeFileSync(`${store.root}/app.js`, 'app({ other: true })\\n');\nconst { clean");
  writeFileSync(script, edit.replace("from 'decree'", `from '${pathToFileURL(join(pkg, 'index.js'))}'`));
  const out2 = execFileSync(process.execPath, [script, p2.root], { encoding: 'utf8' });
  assert.match(out2, /^M app\.js\n'app\.js': .+\n$/);
  assert.equal(readFileSync(join(p2.root, 'app.js'), 'utf8'), 'app({ other: true })\n');
});
