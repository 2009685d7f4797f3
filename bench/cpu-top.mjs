// Host-side hot spots of a troupe run: the functions with the most self time in the newest V8 CPU profile of a
// folder (node --cpu-prof --cpu-prof-dir DIR ...), one line each. Usage: node bench/cpu-top.mjs DIR [N]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const [dir, count = '30'] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/cpu-top.mjs DIR [N]');
const newest = readdirSync(dir).map((f) => join(dir, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
if (!newest) throw new Error(`no profile in ${dir}`);
const profile = JSON.parse(readFileSync(newest, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
let total = 0;
profile.samples.forEach((id, i) => {
  const { functionName, url, lineNumber } = nodes.get(id).callFrame;
  const key = `${functionName || '(anonymous)'} ${url.split('/').pop()}:${lineNumber}`;
  self.set(key, (self.get(key) ?? 0) + profile.timeDeltas[i]);
  total += profile.timeDeltas[i];
});
console.log(`${newest}: ${(total / 1e3).toFixed(0)} ms sampled`);
for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(count))) {
  console.log(`${(us / 1e3).toFixed(1).padStart(9)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${key}`);
}
