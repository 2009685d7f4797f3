// `npm start` after set-up: `troupe start` under the runtime that runs it best on this machine. With a GPU
// device node (/dev/nvidiactl, /dev/dri/renderD*) that is Node/Dawn; on a CPU-only machine Deno/wgpu on
// lavapipe, which runs the demo training several times faster than Dawn on SwiftShader (measured here: a
// Voting step of 2 tasks x 4 rollouts took 17 s under Deno/lavapipe and 118 s under Node/SwiftShader).
// TROUPE_RUNTIME=node|deno picks one. Arguments are passed on to `troupe start`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const gpuDevice = existsSync('/dev/nvidiactl') || (existsSync('/dev/dri') && readdirSync('/dev/dri').some((f) => f.startsWith('renderD')));
const runtime = process.env.TROUPE_RUNTIME ?? (gpuDevice ? 'node' : 'deno');
if (runtime !== 'node' && runtime !== 'deno') {
  console.error(`npm start: TROUPE_RUNTIME must be node or deno, got ${runtime}`);
  process.exit(2);
}
const args = process.argv.slice(2);
const [cmd, cmdArgs] =
  runtime === 'node'
    ? [process.execPath, [join(root, 'bin/troupe.mjs'), 'start', ...args]]
    : [join(root, 'node_modules/deno/deno'), ['run', '-A', join(root, 'src/cli/main.ts'), 'start', ...args]];
console.error(`npm start: troupe start under ${runtime}${gpuDevice ? '' : ' (no GPU device: the CPU driver lavapipe through wgpu)'}`);
const r = spawnSync(cmd, cmdArgs, { cwd: root, stdio: 'inherit', env: { XDG_RUNTIME_DIR: '/tmp', ...process.env } });
process.exit(r.status ?? 1);
