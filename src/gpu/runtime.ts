// Finds a WebGPU implementation for the runtime we are in: the browser's or Deno's `navigator.gpu`,
// or Dawn through the npm `webgpu` package under Node. On a machine without a GPU Vulkan driver,
// Node is pointed at SwiftShader (Dawn refuses Debian's lavapipe); Deno's wgpu picks lavapipe itself.

export type RuntimeName = 'browser' | 'deno' | 'node';

export interface GpuRuntime {
  name: RuntimeName;
  gpu: GPU;
  /** Which Vulkan driver was chosen for a CPU-only machine, or null when a GPU driver is used / unknown. */
  cpuDriver: string | null;
}

export class GpuUnavailableError extends Error {
  override name = 'GpuUnavailableError';
}

const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const GPU_ICD_DIRS = ['/usr/share/vulkan/icd.d', '/etc/vulkan/icd.d', '/usr/local/nvidia/share/vulkan/icd.d'];

export function detectRuntime(): RuntimeName {
  const g = globalThis as { Deno?: unknown; process?: { versions?: { node?: string } }; window?: unknown };
  if (g.Deno) return 'deno';
  if (g.process?.versions?.node && typeof g.window === 'undefined') return 'node';
  return 'browser';
}

let notified = false;
function sayOnce(message: string): void {
  if (notified) return;
  notified = true;
  console.error(`troupe: ${message}`);
}

let cached: Promise<GpuRuntime> | null = null;

/** Dawn toggles for Node; one comma-joined element, as dawn.node expects. For measuring what Dawn's checks cost,
 * trusted shaders and calls only: TROUPE_DAWN_ROBUSTNESS=off adds disable_robustness (no bounds clamping of buffer
 * accesses), TROUPE_DAWN_VALIDATION=off adds skip_validation (no WebGPU validation of the calls as they are recorded). */
export function dawnFlags(env: Record<string, string | undefined>): string[] {
  const toggles = ['allow_unsafe_apis', 'vulkan_enable_f16_on_nvidia'];
  const onOff = (name: string): 'on' | 'off' => {
    const value = env[name] ?? 'on';
    if (value !== 'on' && value !== 'off') throw new GpuUnavailableError(`${name}=${value}: expected on or off`);
    return value;
  };
  if (onOff('TROUPE_DAWN_ROBUSTNESS') === 'off') toggles.push('disable_robustness');
  if (onOff('TROUPE_DAWN_VALIDATION') === 'off') toggles.push('skip_validation');
  return [`enable-dawn-features=${toggles.join(',')}`];
}

export function loadRuntime(): Promise<GpuRuntime> {
  cached ??= loadRuntimeUncached();
  return cached;
}

async function loadRuntimeUncached(): Promise<GpuRuntime> {
  const name = detectRuntime();
  if (name === 'deno') useVulkanOnlyInDeno();
  if (name !== 'node') {
    const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
    if (!gpu) {
      throw new GpuUnavailableError(
        name === 'deno'
          ? 'navigator.gpu is missing in Deno: run with -A (and --unstable-webgpu on Deno < 2); on a CPU-only machine install lavapipe (apt-get install mesa-vulkan-drivers)'
          : 'this browser exposes no navigator.gpu: use a WebGPU-enabled browser (Chrome 113+, or --enable-unsafe-webgpu)',
      );
    }
    return { name, gpu, cpuDriver: null };
  }
  const fs = await import('node:fs');
  const env = process.env;
  let cpuDriver: string | null = null;
  if (!env.VK_ICD_FILENAMES && !env.VK_DRIVER_FILES) {
    // Mesa ships ICDs for hardware it may not find; a GPU needs a device node too.
    const icds = GPU_ICD_DIRS.flatMap((d) => (fs.existsSync(d) ? fs.readdirSync(d) : []));
    const gpuIcd = icds.some((f) => !/lvp|lavapipe|swiftshader/i.test(f));
    const devDri = fs.existsSync('/dev/dri') ? fs.readdirSync('/dev/dri').some((f) => f.startsWith('renderD')) : false;
    const gpuDevice = fs.existsSync('/dev/nvidiactl') || devDri;
    if (!(gpuIcd && gpuDevice)) {
      if (!fs.existsSync(SWIFTSHADER_ICD)) {
        throw new GpuUnavailableError(
          `no GPU Vulkan driver and no CPU driver found: install Debian's chromium package (it ships SwiftShader at ${SWIFTSHADER_ICD}) or a GPU driver`,
        );
      }
      env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
      env.XDG_RUNTIME_DIR ??= '/tmp';
      cpuDriver = 'SwiftShader';
      sayOnce('no GPU Vulkan driver found; using SwiftShader (CPU) through Dawn');
    }
  } else if (/swiftshader/i.test(env.VK_ICD_FILENAMES ?? env.VK_DRIVER_FILES ?? '')) {
    cpuDriver = 'SwiftShader';
  }
  const webgpu = (await import('webgpu')) as unknown as { create(flags: string[]): GPU; globals: Record<string, unknown> };
  Object.assign(globalThis, webgpu.globals);
  return { name, gpu: webgpu.create(dawnFlags(env)), cpuDriver };
}

/** wgpu probes every backend, so Deno loads libEGL too; libEGL's destructor at exit can race a worker
 * thread's exit (double free, SIGABRT after all work is done). troupe only uses Vulkan on Linux. */
function useVulkanOnlyInDeno(): void {
  const deno = (globalThis as { Deno?: { build: { os: string }; env: { get(k: string): string | undefined; set(k: string, v: string): void } } }).Deno!;
  if (deno.build.os === 'linux' && !deno.env.get('DENO_WEBGPU_BACKEND')) deno.env.set('DENO_WEBGPU_BACKEND', 'vulkan');
}
