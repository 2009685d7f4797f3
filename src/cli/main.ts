// Entry point of the `troupe` CLI under Node (bin/troupe.mjs bundles and imports this file) and Deno
// (`deno task troupe`, which runs it directly).
import { runCli } from './cli.ts';

// wgpu's Vulkan loader (Deno) and Mesa complain on stderr when XDG_RUNTIME_DIR is unset.
process.env.XDG_RUNTIME_DIR ??= '/tmp';

const deno = (globalThis as { Deno?: { args: string[] } }).Deno;
const code = await runCli(deno ? deno.args : process.argv.slice(2));
// The GPU device keeps the event loop alive: exit explicitly.
process.exit(code);
