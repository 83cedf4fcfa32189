// Helpers of the package's tests: temp projects with real files, and an
// exact picture of a tree (bytes, permission bits, symlink targets).
import { mkdtempSync, rmSync, mkdirSync, writeFileSync, chmodSync, symlinkSync,
  lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';

export function tempProject(t) {
  const dir = mkdtempSync(join(tmpdir(), 'decree-node-'));
  const root = join(dir, 'proj');
  mkdirSync(root);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, root };
}

// files: { path: string | Buffer | { data, mode } | { link } }
export function writeTree(root, files) {
  for (const [p, v] of Object.entries(files)) {
    const full = join(root, p);
    mkdirSync(dirname(full), { recursive: true });
    if (v && typeof v === 'object' && 'link' in v) {
      rmSync(full, { force: true });
      symlinkSync(v.link, full);
    } else if (v && typeof v === 'object' && !Buffer.isBuffer(v)) {
      writeFileSync(full, v.data);
      chmodSync(full, v.mode);
    } else {
      writeFileSync(full, v);
    }
  }
}

// { path: 'file 644 <hex>' | 'link <target>' } of every entry but .decree
export function picture(root) {
  const out = {};
  const walk = (rel) => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      if (!rel && name === '.decree') continue;
      const p = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(root, p));
      if (st.isSymbolicLink()) out[p] = `link ${readlinkSync(join(root, p))}`;
      else if (st.isDirectory()) walk(p);
      else out[p] = `file ${(st.mode & 0o777).toString(8)} ${readFileSync(join(root, p)).toString('hex')}`;
    }
  };
  walk('');
  return out;
}
