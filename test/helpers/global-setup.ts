// Embeds the WGSL before any test imports the generated module.
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  execFileSync(process.execPath, ['scripts/embed-shaders.mjs'], { stdio: 'inherit' });
}
