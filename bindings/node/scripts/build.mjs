// The install script: build libdecree.a in the source tree, then the addon.
//
//  1. `make build/libdecree.a` at the top of the source tree (B=build, no
//     sanitizers): nothing to do when `make` has already been run, and
//     the archive is brought up to date when the sources changed.
//     DECREE_SKIP_LIB_BUILD=1 skips it (the archive must exist).
//  2. node-addon-api (the C++ wrapper of N-API, headers only) at the
//     version package-lock.json pins: npm installs a package's
//     dependencies, but not those of a folder it links from outside the
//     installing project (`npm install /path/to/decree/bindings/node`);
//     then `npm ci --ignore-scripts` here puts them in
//     bindings/node/node_modules.
//  3. `node-gyp rebuild` with npm's own node-gyp.  node-gyp downloads the
//     headers of the running node from nodejs.org unless it is told where
//     they are: when npm_config_nodedir is not set and the headers are
//     installed beside node (<prefix>/include/node/common.gypi, as
//     NodeSource's and the official packages install them), --nodedir=
//     <prefix> is passed, so the build works offline.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// DECREE_SOURCE_DIR: the source tree, for a copy of the package made
// elsewhere (npm install --install-links); it must be built (make).
const top = resolve(process.env.DECREE_SOURCE_DIR || resolve(here, '../..'));

function run(cmd, args, opts) {
  console.error(`decree: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) {
    console.error(`decree: cannot run ${cmd}: ${r.error.message}`);
    process.exit(1);
  }
  if (r.status !== 0) {
    console.error(`decree: ${cmd} failed (status ${r.status ?? r.signal})`);
    process.exit(1);
  }
}

if (!existsSync(join(top, 'include/decree/decree.h')) || !existsSync(join(top, 'Makefile'))) {
  console.error(`decree: ${here} is not in decree's source tree (no ${top}/include/decree): ` +
    'the package builds from the source tree (npm install ./bindings/node)');
  process.exit(1);
}

if (process.env.DECREE_SKIP_LIB_BUILD !== '1') {
  // A clean environment for the library's make: the settings of a build
  // that runs this install (B=build/san SANITIZE=1 of make check, a
  // jobserver) must not reach it.
  const env = { ...process.env };
  for (const k of ['B', 'SANITIZE', 'OPT', 'CFLAGS', 'CPPFLAGS', 'LDFLAGS',
    'MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES']) delete env[k];
  const jobs = String(Math.max(1, Math.min(availableParallelism(), 8)));
  run('make', ['-C', top, '--no-print-directory', `-j${jobs}`, 'B=build',
    'build/libdecree.a'], { env });
} else if (!existsSync(join(top, 'build/libdecree.a'))) {
  console.error(`decree: DECREE_SKIP_LIB_BUILD=1 but ${top}/build/libdecree.a does not exist (run make)`);
  process.exit(1);
}

const require = createRequire(join(here, 'package.json'));
try {
  require.resolve('node-addon-api');
} catch {
  const npm = process.env.npm_execpath;
  if (npm && existsSync(npm))
    run(process.execPath, [npm, 'ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: here });
  else
    run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: here });
}

const gypArgs = ['rebuild'];
if (!process.env.npm_config_nodedir) {
  const prefix = resolve(dirname(process.execPath), '..');
  if (existsSync(join(prefix, 'include/node/common.gypi')))
    gypArgs.push(`--nodedir=${prefix}`);
}
const gyp = process.env.npm_config_node_gyp;
const gypEnv = { ...process.env, DECREE_SOURCE_DIR: top };
if (gyp && existsSync(gyp))
  run(process.execPath, [gyp, ...gypArgs], { cwd: here, env: gypEnv });
else
  run('node-gyp', gypArgs, { cwd: here, env: gypEnv });
