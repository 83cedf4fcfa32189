// A checkpoint of an unchanged tree: in process through the Node package
// against the `decree` program, on the same generated tree and store.
//
//   node bindings/node/bench/unchanged.mjs [path/to/decree] [--files N] [--reps N]
//
// The tree: N files (default 5000) of 1-4 KiB in 50 directories, in a temp
// directory, with its store inside (.decree/store).  After a first
// checkpoint (which stores everything and fills the stat cache), each
// repetition makes one checkpoint of the unchanged tree, alternating:
// Store.checkpoint() on an open Store, then `decree checkpoint create -q`
// (a process: start, open, walk, write the record).  Both make a new
// record each time (no --if-changed).  Prints the medians and the minimum.
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Store } from '../index.js';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let decree = join(here, '../../../build/decree');
let files = 5000, reps = 15;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--files') files = Number(args[++i]);
  else if (args[i] === '--reps') reps = Number(args[++i]);
  else decree = args[i];
}

const dir = mkdtempSync(join(tmpdir(), 'decree-bench-'));
const root = join(dir, 'tree');
let seed = 42;
const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
for (let i = 0; i < files; i++) {
  const d = join(root, `d${i % 50}`);
  if (i < 50) mkdirSync(d, { recursive: true });
  writeFileSync(join(d, `f${i}.txt`), `${i} `.repeat(256 + (rand() % 1024)));
}

const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const ms = (ns) => Number(ns) / 1e6;
try {
  const store = await Store.open({ root });
  await store.checkpoint({ label: 'first' });
  const lib = [], cli = [];
  for (let r = 0; r < reps; r++) {
    let t = process.hrtime.bigint();
    await store.checkpoint();
    lib.push(ms(process.hrtime.bigint() - t));
    t = process.hrtime.bigint();
    execFileSync(decree, ['-C', root, '-q', 'checkpoint', 'create']);
    cli.push(ms(process.hrtime.bigint() - t));
  }
  await store.close();
  const row = (name, a) => console.log(
    `${name.padEnd(34)} median ${median(a).toFixed(1).padStart(7)} ms   min ${Math.min(...a).toFixed(1).padStart(7)} ms`);
  console.log(`unchanged checkpoint, ${files} files, ${reps} reps`);
  row('Store.checkpoint() (in process)', lib);
  row('decree checkpoint create -q', cli);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
