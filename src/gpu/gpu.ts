// The one GPU object every kernel goes through: device set-up with the features and limits kernels can
// use, tensors from a buffer pool, a pipeline cache keyed by WGSL variant, batched dispatches with their
// uniforms, reads back to the CPU, per-kernel timing, and errors that name the kernel or buffer.
import { SHADERS } from '../generated/shaders.ts';
import { BYTES, type DType, fromF16Array, toF16Array } from './dtype.ts';
import { GpuDeviceLostError, GpuError, GpuLimitError, GpuOutOfMemoryError, GpuValidationError } from './errors.ts';
import { BufferPool, sizeClass, STORAGE_USAGE } from './pool.ts';
import { Profiler, type ProfilerOptions } from './profiler.ts';
import { loadRuntime, type RuntimeName } from './runtime.ts';
import { Tensor } from './tensor.ts';
import { Timeline } from './timeline.ts';
import { preprocessWgsl } from './preprocess.ts';
import type { Uniforms } from './uniforms.ts';

/** Optional features troupe enables when the adapter has them: f16 storage variants of the kernels
 * (`shader-f16`), the profiler (`timestamp-query`), and the tensor-core matmul (`subgroups` with
 * `chromium-experimental-subgroup-matrix`, Dawn only: src/kernels/matmul-tc.ts). */
export const WANTED_FEATURES = ['shader-f16', 'timestamp-query', 'subgroups', 'chromium-experimental-subgroup-matrix'] as const;

/** One shape of subgroup matrix product the adapter runs (GPUSubgroupMatrixConfig): M x K times K x N. */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/** Bind groups kept for reuse (the oldest is dropped beyond this); a decode step of Qwen3-0.6B has ~500 dispatches. */
const BIND_GROUP_CACHE = 4096;

/** Reads up to this size reuse their map buffers. */
const READ_REUSE_BYTES = 1 << 20;

/** Limits raised to the adapter's maximum when requesting the device. */
const RAISED_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
  'maxUniformBufferBindingSize',
] as const;

export interface GpuOptions {
  /** Features not to enable even when present (to test the f32 fallbacks). */
  disable?: string[];
  powerPreference?: GPUPowerPreference;
  /** Record per-kernel GPU time with timestamp queries (when the feature exists); options set the profiler's limits. */
  profile?: boolean | ProfilerOptions;
  /** Time every batch's start and end (when timestamp-query exists): GPU busy and idle time per phase. */
  timeline?: boolean;
}

/** Compile-time choices prepended to a shader: `enable`s, type aliases and constants. */
export interface ShaderVariant {
  enables?: string[];
  aliases?: Record<string, string>;
  consts?: Record<string, number | boolean>;
}

export interface BufferSlice {
  buffer: GPUBuffer;
  offset?: number;
  size?: number;
}

export interface Dispatch {
  /** File name in shaders/, without .wgsl. */
  shader: string;
  entry?: string;
  variant?: ShaderVariant;
  /** Bound at binding 0 when present. */
  uniforms?: Uniforms;
  /** Storage buffers at bindings 1, 2, … in order; null skips a binding the entry point does not use
   * (layout 'auto' keeps only the bindings an entry point statically uses). */
  bindings: (Tensor | BufferSlice | null)[];
  workgroups: readonly [number, number?, number?];
  /** Name used in timings and errors; defaults to the shader name. */
  label?: string;
}

export interface AdapterReport {
  runtime: RuntimeName;
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** Name of the CPU Vulkan driver (SwiftShader, lavapipe) when software-rendered, else null. */
  cpuDriver: string | null;
  /** Features enabled on the device (those of WANTED_FEATURES the adapter has, less --disable). */
  features: string[];
  /** Every feature the adapter offers, used or not. */
  adapterFeatures: string[];
  limits: Record<string, number>;
  /** Subgroup sizes and subgroup matrix configs, when the device has those features enabled (configs only where
   * the shader compiler takes the builtins as the tensor-core shaders write them: subgroupMatrixSyntax). */
  subgroups: { minSize: number; maxSize: number } | null;
  subgroupMatrixConfigs: SubgroupMatrixConfig[];
  /** Why the device's subgroup matrices go unused although it has them, or null. */
  subgroupMatrixRefused: string | null;
}

const UNIFORM_CHUNK = 65536;
/** Smallest staging buffer of a write, and how many free ones of a size class are kept mapped. */
const STAGING_MIN = 256;
const STAGING_KEEP = 16;

/** A short string that tells variants apart (the pipeline cache's key): cheaper to build than the header, which
 * dispatch would otherwise rebuild for every kernel it records. Holds no ':' or '@' (bind group keys use them). */
export function variantKey(v: ShaderVariant | undefined): string {
  if (!v) return '';
  let k = '';
  if (v.enables) for (const e of v.enables) k += `${e},`;
  k += ';';
  const aliases = v.aliases;
  if (aliases) for (const name in aliases) k += `${name}=${aliases[name]},`;
  k += ';';
  const consts = v.consts;
  if (consts) for (const name in consts) k += `${name}=${consts[name]},`;
  return k;
}

export function variantHeader(v: ShaderVariant | undefined): string {
  if (!v) return '';
  const enables = new Set(v.enables ?? []);
  for (const t of Object.values(v.aliases ?? {})) if (/\bf16\b/.test(t)) enables.add('f16');
  const lines = [...enables].map((e) => `enable ${e};`);
  for (const [k, t] of Object.entries(v.aliases ?? {})) lines.push(`alias ${k} = ${t};`);
  for (const [k, c] of Object.entries(v.consts ?? {})) {
    lines.push(`const ${k} = ${typeof c === 'boolean' ? c : Number.isInteger(c) ? String(c) : `${c}f`};`);
  }
  return lines.join('\n') + '\n';
}

/** A read whose copy is submitted and whose map starts on start() (Gpu.readBytesLater). */
export class PendingRead {
  readonly bytes: Promise<ArrayBuffer>;
  private settle!: (p: Promise<ArrayBuffer>) => void;
  private begun = false;

  constructor(private readonly map: () => Promise<ArrayBuffer>) {
    this.bytes = new Promise<ArrayBuffer>((resolve) => (this.settle = resolve));
    // Awaited later, if at all: no unhandled rejection meanwhile.
    this.bytes.catch(() => {});
  }

  get started(): boolean {
    return this.begun;
  }

  /** Calls mapAsync now, synchronously (under Deno the call itself waits for the GPU). */
  start(): void {
    if (this.begun) return;
    this.begun = true;
    this.settle(this.map());
  }
}

export class Gpu {
  readonly pool: BufferPool;
  readonly profiler: Profiler | null;
  readonly timeline: Timeline | null;
  /** What the commands recorded from now on are part of (a GRPO step's rollout, update, ...): the profiler's
   * labels and the timeline's batches carry it. Empty: no phase. */
  phase = '';
  private readonly pipelines = new Map<string, GPUComputePipeline>();
  private readonly featureSet: Set<string>;
  /** Id of each pipeline and buffer, for bind group cache keys. */
  private readonly ids = new WeakMap<object, number>();
  private nextId = 1;
  /** Bind groups by pipeline + (binding, buffer, offset, size) of every entry: a pooled buffer that now holds
   * another tensor is still the same GPUBuffer, so a bind group over it stays valid for the same layout. */
  private readonly bindGroups = new Map<string, GPUBindGroup>();
  readonly bindGroupStats = { hits: 0, misses: 0 };
  /** Reuse bind groups (on by default; off only to measure what they cost, bench/dispatch.ts). */
  cacheBindGroups = true;
  /** Map-read buffers of finished small reads, by size class. */
  private readonly readBuffers = new Map<number, GPUBuffer[]>();
  /** Buffers that commands recorded in the open batch use: writes to any other buffer go straight to the queue. */
  private batchBuffers = new Set<GPUBuffer>();
  private readonly pendingErrors: Promise<GpuError | null>[] = [];
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  /** The pipeline the open pass last set. */
  private passPipeline: GPUComputePipeline | null = null;
  private batchLabels: string[] = [];
  private uniformChunks: { buffer: GPUBuffer; staged: Uint8Array; words: Uint32Array; used: number }[] = [];
  private uniformChunk = 0;
  private lostInfo: GPUDeviceLostInfo | null = null;
  private destroyed = false;
  private lastKernels: string[] = [];
  /** Staging buffers of writes recorded in the open batch; once it is submitted each is mapped again and returns
   * to `stagingFree` (creating a mapped buffer per write cost more host time than the decode step's kernels). */
  private staging: GPUBuffer[] = [];
  /** Mapped staging buffers ready for a write, by size class (a power of two). */
  private readonly stagingFree = new Map<number, GPUBuffer[]>();
  readonly stagingStats = { created: 0, reused: 0 };

  private constructor(
    readonly device: GPUDevice,
    readonly adapter: GPUAdapter,
    readonly report: AdapterReport,
    profile: boolean | ProfilerOptions,
    timeline: boolean,
  ) {
    this.featureSet = new Set(report.features);
    this.pool = new BufferPool(
      (size, label) => this.createBuffer(size, STORAGE_USAGE, label),
      (buffers) => this.forgetBuffers(buffers),
    );
    this.profiler = profile && this.has('timestamp-query') ? new Profiler(device, profile === true ? {} : profile) : null;
    this.timeline = timeline && this.has('timestamp-query') ? new Timeline(device) : null;
    void device.lost.then((info) => {
      this.lostInfo = info;
    });
    device.addEventListener('uncapturederror', (e) => {
      const err = (e as GPUUncapturedErrorEvent).error;
      this.pendingErrors.push(Promise.resolve(new GpuValidationError(`uncaptured GPU error: ${err.message}`)));
    });
  }

  static async create(options: GpuOptions = {}): Promise<Gpu> {
    const rt = await loadRuntime();
    const adapter = await rt.gpu.requestAdapter({ powerPreference: options.powerPreference ?? 'high-performance' });
    if (!adapter) {
      throw new GpuError(
        `no WebGPU adapter under ${rt.name}: install a Vulkan driver (GPU driver, or on a CPU-only machine: ` +
          `apt-get install chromium for SwiftShader under Node, mesa-vulkan-drivers for lavapipe under Deno)`,
      );
    }
    const disabled = new Set(options.disable ?? []);
    // The tensor-core kernels need subgroups and f16 as well.
    if (disabled.has('subgroups') || disabled.has('shader-f16')) disabled.add('chromium-experimental-subgroup-matrix');
    const features = WANTED_FEATURES.filter((f) => adapter.features.has(f) && !disabled.has(f)) as GPUFeatureName[];
    const requiredLimits: Record<string, number> = {};
    const alimits = adapter.limits as unknown as Record<string, number>;
    for (const name of RAISED_LIMITS) if (typeof alimits[name] === 'number') requiredLimits[name] = alimits[name]!;
    const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
    const info = adapter.info ?? ({} as GPUAdapterInfo);
    const text = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`;
    const cpuDriver = rt.cpuDriver ?? (/swiftshader/i.test(text) ? 'SwiftShader' : /llvmpipe|lavapipe/i.test(text) ? 'lavapipe' : null);
    if (cpuDriver && rt.name === 'deno') console.error(`troupe: no GPU adapter; using ${cpuDriver} (CPU) through wgpu`);
    const limits: Record<string, number> = {};
    const dl = device.limits as unknown as Record<string, number>;
    for (const k in dl) if (typeof dl[k] === 'number') limits[k] = dl[k]!;
    const report: AdapterReport = {
      runtime: rt.name,
      vendor: info.vendor ?? '',
      architecture: info.architecture ?? '',
      device: info.device ?? '',
      description: info.description ?? '',
      cpuDriver,
      features: [...device.features].map(String).sort(),
      adapterFeatures: [...adapter.features].map(String).sort(),
      limits,
      ...(await subgroupInfo(device, info)),
    };
    return new Gpu(device, adapter, report, options.profile ?? false, options.timeline ?? false);
  }

  has(feature: string): boolean {
    return this.featureSet.has(feature);
  }

  /** Whether f16 storage and arithmetic are available in shaders. */
  get f16(): boolean {
    return this.has('shader-f16');
  }

  /** The device's limits as plain numbers (report.limits): each read of a native limits object crosses into
   * the runtime, and dispatch reads several. */
  get limits(): GPUSupportedLimits {
    return this.report.limits as unknown as GPUSupportedLimits;
  }

  get memory() {
    return this.pool.stats;
  }

  // ---- buffers and tensors ----

  private createBuffer(size: number, usage: number, label: string): GPUBuffer {
    this.checkLost(label);
    if (size > this.limits.maxBufferSize) {
      throw new GpuLimitError(`buffer ${label}: ${size} bytes exceeds maxBufferSize ${this.limits.maxBufferSize}`);
    }
    this.device.pushErrorScope('out-of-memory');
    const buffer = this.device.createBuffer({ size, usage, label });
    this.pendingErrors.push(
      this.device.popErrorScope().then((e) => (e ? new GpuOutOfMemoryError(`out of GPU memory allocating ${label} (${size} bytes): ${e.message}`) : null)),
    );
    return buffer;
  }

  /** A new tensor (contents undefined until written). */
  tensor(shape: readonly number[], dtype: DType, label: string): Tensor {
    const n = shape.reduce((a, b) => a * b, 1);
    if (!shape.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`${label}: bad shape [${shape}]`);
    const bytes = Math.max(4, Math.ceil((n * BYTES[dtype]) / 4) * 4);
    return new Tensor(this, this.pool.acquire(bytes, label), shape, dtype, label);
  }

  /** A tensor holding `data`. f16 tensors take float data (converted) or raw Uint16 bits. */
  upload(data: ArrayLike<number> | ArrayBufferView, shape: readonly number[], dtype: DType, label: string): Tensor {
    const t = this.tensor(shape, dtype, label);
    this.write(t, data);
    return t;
  }

  write(t: Tensor, data: ArrayLike<number> | ArrayBufferView, elementOffset = 0): void {
    expectLive('write to', t);
    let bytes: ArrayBufferView;
    if (t.dtype === 'f16') bytes = data instanceof Uint16Array ? data : toF16Array(data as ArrayLike<number>);
    else if (ArrayBuffer.isView(data) && !(data instanceof Float64Array) && !(data instanceof DataView)) {
      const expected = t.dtype === 'f32' ? Float32Array : t.dtype === 'u32' ? Uint32Array : Int32Array;
      bytes = data instanceof expected || data instanceof Uint8Array ? data : new expected(data as unknown as ArrayLike<number>);
    } else {
      const ctor = t.dtype === 'f32' ? Float32Array : t.dtype === 'u32' ? Uint32Array : Int32Array;
      bytes = new ctor(data as ArrayLike<number>);
    }
    const off = elementOffset * BYTES[t.dtype];
    if (off + bytes.byteLength > t.buffer.size) {
      throw new GpuLimitError(`write to ${t.label}: ${bytes.byteLength} bytes at ${off} overflow its ${t.buffer.size}-byte buffer`);
    }
    let len = bytes.byteLength;
    let src: Uint8Array = new Uint8Array(bytes.buffer, bytes.byteOffset, len);
    if (len % 4) {
      const padded = new Uint8Array(Math.ceil(len / 4) * 4);
      padded.set(src);
      src = padded;
      len = padded.length;
    }
    if (!this.batchLabels.length || !this.batchBuffers.has(t.buffer)) {
      // No command recorded in the open batch uses this buffer, so writing it before the batch runs is the
      // same as writing it in program order (earlier submits are ordered before the write).
      this.device.queue.writeBuffer(t.buffer, off, src as Uint8Array<ArrayBuffer>, 0, len);
      return;
    }
    // queue.writeBuffer would run before the commands recorded so far: go through a staging buffer
    // copied in the batch instead, which keeps program order without a submit.
    const cls = Math.max(STAGING_MIN, 2 ** Math.ceil(Math.log2(len)));
    let staging = this.stagingFree.get(cls)?.pop();
    if (staging) {
      this.stagingStats.reused++;
    } else {
      staging = this.device.createBuffer({ size: cls, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true, label: 'write staging' });
      this.stagingStats.created++;
    }
    new Uint8Array(staging.getMappedRange(0, len)).set(src.subarray(0, len));
    staging.unmap();
    this.endPass();
    this.encoder!.copyBufferToBuffer(staging, 0, t.buffer, off, len);
    this.batchBuffers.add(t.buffer);
    this.batchLabels.push(`write ${t.label}`);
    this.staging.push(staging);
  }

  /** Reads a tensor back: Float32Array for f32 and f16 (converted), Uint32Array/Int32Array otherwise. */
  async read(t: Tensor): Promise<Float32Array | Uint32Array | Int32Array> {
    expectLive('read of', t);
    const raw = await this.readBytes(t.buffer, 0, Math.ceil(t.byteLength / 4) * 4, t.label);
    switch (t.dtype) {
      case 'f32':
        return new Float32Array(raw);
      case 'f16':
        return fromF16Array(new Uint16Array(raw, 0, t.size));
      case 'u32':
        return new Uint32Array(raw);
      case 'i32':
        return new Int32Array(raw);
    }
  }

  async readF32(t: Tensor): Promise<Float32Array> {
    if (t.dtype !== 'f32' && t.dtype !== 'f16') throw new Error(`readF32: ${t.label} is ${t.dtype}`);
    return (await this.read(t)) as Float32Array;
  }

  async readBytes(buffer: GPUBuffer, offset: number, size: number, label = buffer.label): Promise<ArrayBuffer> {
    const read = this.readBytesLater(buffer, offset, size, label);
    read.start();
    return read.bytes;
  }

  /** Whether mapping a buffer waits, on the calling thread, until the GPU has finished all submitted work.
   * Deno's wgpu binding does (mapAsync polls the device to idle before it returns, then resolves after a 10 ms
   * sleep; 29 ms in the call with a few decode steps queued, lavapipe): there a read that starts right after
   * its submit stalls the host until the GPU drains, so the rollout engine starts several reads at once. */
  get mapWaitsForQueue(): boolean {
    return this.report.runtime === 'deno';
  }

  /** Copies `size` bytes into a map buffer with the current batch and submits it; the map begins at start()
   * (bytes settles only after that). readBytes starts at once; see mapWaitsForQueue for why one might wait. */
  readBytesLater(buffer: GPUBuffer, offset: number, size: number, label = buffer.label): PendingRead {
    this.checkLost(label);
    // Small reads (a decode step's draws) reuse their map buffers; large ones get a fresh one.
    const cls = sizeClass(Math.max(4, size));
    const reuse = cls <= READ_REUSE_BYTES;
    const staging =
      (reuse ? this.readBuffers.get(cls)?.pop() : undefined) ??
      this.device.createBuffer({ size: reuse ? cls : Math.max(4, size), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'read staging' });
    this.endPass();
    this.beginBatch();
    this.encoder!.copyBufferToBuffer(buffer, offset, staging, 0, size);
    this.batchBuffers.add(buffer);
    this.batchLabels.push(`read ${label}`);
    this.flush();
    const map = async (): Promise<ArrayBuffer> => {
      try {
        await staging.mapAsync(GPUMapMode.READ);
      } catch (e) {
        await this.throwPending();
        this.checkLost(label);
        throw new GpuError(`reading ${label} failed: ${(e as Error).message}`);
      }
      const out = staging.getMappedRange(0, Math.ceil(size / 4) * 4).slice(0, size);
      staging.unmap();
      let free = this.readBuffers.get(cls);
      if (reuse && !free) this.readBuffers.set(cls, (free = []));
      if (reuse && free!.length < 4) free!.push(staging);
      else staging.destroy();
      await this.throwPending();
      return out;
    };
    return new PendingRead(map);
  }

  copy(src: Tensor, dst: Tensor, bytes = Math.min(src.byteLength, dst.buffer.size), srcOffset = 0, dstOffset = 0): void {
    expectLive('copy from', src);
    expectLive('copy to', dst);
    this.endPass();
    this.beginBatch();
    this.encoder!.copyBufferToBuffer(src.buffer, srcOffset, dst.buffer, dstOffset, Math.ceil(bytes / 4) * 4);
    this.batchBuffers.add(src.buffer).add(dst.buffer);
    this.batchLabels.push(`copy ${src.label}->${dst.label}`);
  }

  // ---- pipelines and dispatch ----

  pipeline(shader: string, entry = 'main', variant?: ShaderVariant): GPUComputePipeline {
    const key = `${shader}|${entry}|${variantKey(variant)}`;
    let p = this.pipelines.get(key);
    if (p) return p;
    const header = variantHeader(variant);
    const source = SHADERS[shader];
    if (source === undefined) throw new GpuError(`unknown shader ${shader} (no shaders/${shader}.wgsl; run npm run embed)`);
    const label = `${shader}:${entry}`;
    this.device.pushErrorScope('validation');
    const module = this.device.createShaderModule({ code: header + preprocessWgsl(source, variant?.consts ?? {}, `shaders/${shader}.wgsl`), label });
    p = this.device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: entry }, label });
    this.pendingErrors.push(
      this.device.popErrorScope().then(async (e) => {
        if (!e) return null;
        const info = await module.getCompilationInfo();
        const msgs = info.messages.map((m) => `  ${m.type} at ${m.lineNum}:${m.linePos}: ${m.message}`).join('\n');
        return new GpuValidationError(`shader ${label} failed to compile or validate: ${e.message}${msgs ? '\n' + msgs : ''}`);
      }),
    );
    this.pipelines.set(key, p);
    return p;
  }

  dispatch(d: Dispatch): void {
    const label = d.label ?? d.shader;
    this.checkLost(label);
    const [x, y = 1, z = 1] = d.workgroups;
    const limits = this.report.limits;
    const maxWg = limits.maxComputeWorkgroupsPerDimension!;
    if (x > maxWg || y > maxWg || z > maxWg) {
      throw new GpuLimitError(`kernel ${label}: workgroups [${x},${y},${z}] exceed maxComputeWorkgroupsPerDimension ${maxWg}`);
    }
    if (x === 0 || y === 0 || z === 0) return;
    // The bind group's key first (pipeline key, then binding:buffer@offset+size): a cached bind group was
    // built, and its bindings checked, for exactly these buffers, so a hit skips the checks and the entries.
    const pipelineKey = `${d.shader}|${d.entry ?? 'main'}|${variantKey(d.variant)}`;
    let key = pipelineKey;
    const bindings = d.bindings;
    for (let i = 0; i < bindings.length; i++) {
      const b = bindings[i];
      if (!b) continue;
      if (b instanceof Tensor) {
        if (b.isReleased) throw new GpuError(`kernel ${label}: binding ${i + 1} (${b.label}) was released`);
        key += `|${i + 1}:${this.idOf(b.buffer)}@`;
      } else {
        key += `|${i + 1}:${this.idOf(b.buffer)}@${b.offset ?? 0}+${b.size ?? '*'}`;
      }
    }
    const u = d.uniforms ? this.uniformSlot(d.uniforms) : null;
    if (u) key += `|0:${this.idOf(u.buffer)}@${u.offset}+${u.size}`;
    let bindGroup = this.cacheBindGroups ? this.bindGroups.get(key) : undefined;
    let pipeline: GPUComputePipeline;
    if (bindGroup) {
      this.bindGroupStats.hits++;
      pipeline = this.pipelines.get(pipelineKey)!;
      this.beginBatch();
    } else {
      this.bindGroupStats.misses++;
      // Bindings are checked before the pipeline is built: a rejected dispatch leaves no pending error behind.
      const entries: GPUBindGroupEntry[] = [];
      const maxBind = limits.maxStorageBufferBindingSize!;
      for (let i = 0; i < bindings.length; i++) {
        const b = bindings[i];
        if (!b) continue;
        const res: GPUBufferBinding = b instanceof Tensor ? { buffer: b.buffer } : { buffer: b.buffer, offset: b.offset ?? 0, size: b.size };
        const size = res.size ?? res.buffer.size - (res.offset ?? 0);
        if (size > maxBind) {
          // A tensor's own label: pooled buffers keep their first label under wgpu (label is not writable there).
          const name = b instanceof Tensor ? b.label : res.buffer.label;
          throw new GpuLimitError(`kernel ${label}: binding ${i + 1} (${name}) is ${size} bytes, over maxStorageBufferBindingSize ${maxBind}`);
        }
        entries.push({ binding: i + 1, resource: res });
      }
      if (u) entries.push({ binding: 0, resource: u });
      pipeline = this.pipeline(d.shader, d.entry, d.variant);
      // Inside the batch's error scopes, so a bind group error is reported with the batch's kernels.
      this.beginBatch();
      bindGroup = this.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries, label });
      if (this.cacheBindGroups) {
        if (this.bindGroups.size >= BIND_GROUP_CACHE) this.bindGroups.delete(this.bindGroups.keys().next().value!);
        this.bindGroups.set(key, bindGroup);
      }
    }
    for (let i = 0; i < bindings.length; i++) {
      const b = bindings[i];
      if (b) this.batchBuffers.add(b.buffer);
    }
    if (u) this.batchBuffers.add(u.buffer);
    let pass: GPUComputePassEncoder;
    if (this.profiler) {
      this.endPass();
      pass = this.encoder!.beginComputePass({ label, timestampWrites: this.profiler.writes(this.phase ? `${this.phase}: ${label}` : label) });
    } else {
      this.pass ??= this.encoder!.beginComputePass();
      pass = this.pass;
    }
    // A pass keeps its pipeline between dispatches (q, k, v projections run the same one in a row).
    if (pipeline !== this.passPipeline || this.profiler) pass.setPipeline(pipeline);
    this.passPipeline = this.profiler ? null : pipeline;
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(x, y, z);
    if (this.profiler) pass.end();
    this.batchLabels.push(label);
  }

  private idOf(o: object): number {
    let id = this.ids.get(o);
    if (id === undefined) this.ids.set(o, (id = this.nextId++));
    return id;
  }

  /** Drops the cached bind groups that use any of these buffers (about to be destroyed). */
  private forgetBuffers(buffers: readonly GPUBuffer[]): void {
    // A buffer appears in a bind group's key as `:id@` (see dispatch).
    const gone: string[] = [];
    for (const b of buffers) {
      const id = this.ids.get(b);
      if (id !== undefined) gone.push(`:${id}@`);
    }
    if (!gone.length) return;
    for (const key of [...this.bindGroups.keys()]) {
      if (gone.some((g) => key.includes(g))) this.bindGroups.delete(key);
    }
  }

  /** Cached bind groups (for tests and benchmarks). */
  get bindGroupCacheSize(): number {
    return this.bindGroups.size;
  }

  private beginBatch(): void {
    if (this.encoder) return;
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
    this.encoder = this.device.createCommandEncoder();
    this.timeline?.begin(this.encoder, this.phase);
  }

  private endPass(): void {
    this.pass?.end();
    this.pass = null;
    this.passPipeline = null;
  }

  private uniformSlot(u: Uniforms): GPUBufferBinding {
    const align = this.report.limits.minUniformBufferOffsetAlignment!;
    const size = u.byteLength;
    let chunk = this.uniformChunks[this.uniformChunk];
    if (chunk && chunk.used + size > UNIFORM_CHUNK) chunk = this.uniformChunks[++this.uniformChunk];
    if (!chunk) {
      const buffer = this.device.createBuffer({ size: UNIFORM_CHUNK, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'uniforms' });
      const staged = new Uint8Array(UNIFORM_CHUNK);
      chunk = { buffer, staged, words: new Uint32Array(staged.buffer), used: 0 };
      this.uniformChunks.push(chunk);
    }
    const offset = chunk.used;
    u.writeTo(chunk.words, offset / 4);
    chunk.used = Math.ceil((offset + size) / align) * align;
    return { buffer: chunk.buffer, offset, size };
  }

  /** Submits everything recorded so far. Errors of the batch surface at the next read/sync. */
  flush(): void {
    if (!this.encoder) return;
    this.endPass();
    for (const c of this.uniformChunks) {
      if (c.used) this.device.queue.writeBuffer(c.buffer, 0, c.staged as Uint8Array<ArrayBuffer>, 0, c.used);
      c.used = 0;
    }
    this.uniformChunk = 0;
    this.profiler?.resolve(this.encoder);
    const labels = this.batchLabels;
    this.timeline?.end(this.encoder, labels[0] ?? '');
    this.lastKernels = labels;
    this.device.queue.submit([this.encoder.finish()]);
    for (const b of this.staging.splice(0)) this.recycleStaging(b);
    this.encoder = null;
    this.batchLabels = [];
    this.batchBuffers = new Set();
    this.profiler?.collect();
    this.timeline?.collect();
    const names = () => summarize(labels);
    const validation = this.device.popErrorScope();
    const oom = this.device.popErrorScope();
    this.pendingErrors.push(
      validation.then((e) => (e ? new GpuValidationError(`GPU validation error in batch [${names()}]: ${e.message}`) : null)),
      oom.then((e) => (e ? new GpuOutOfMemoryError(`out of GPU memory in batch [${names()}]: ${e.message}`) : null)),
    );
  }

  /** Drops everything recorded since the last submit, unsubmitted, and returns how many commands that was
   * (dispatches, copies, writes). Benchmarks time the host's recording alone with it; the batch's writes are
   * lost with it. Not with the profiler on (its queries are part of the batch). */
  discardBatch(): number {
    if (!this.encoder) return 0;
    if (this.profiler) throw new GpuError('discardBatch: the profiler records into the batch; run without --profile');
    const n = this.batchLabels.length;
    const labels = this.batchLabels;
    this.endPass();
    for (const c of this.uniformChunks) c.used = 0;
    this.uniformChunk = 0;
    for (const b of this.staging.splice(0)) this.recycleStaging(b);
    this.encoder = null;
    this.timeline?.discard();
    this.batchLabels = [];
    this.batchBuffers = new Set();
    const validation = this.device.popErrorScope();
    const oom = this.device.popErrorScope();
    this.pendingErrors.push(
      validation.then((e) => (e ? new GpuValidationError(`GPU validation error in discarded batch [${summarize(labels)}]: ${e.message}`) : null)),
      oom.then((e) => (e ? new GpuOutOfMemoryError(`out of GPU memory in discarded batch [${summarize(labels)}]: ${e.message}`) : null)),
    );
    return n;
  }

  /** Maps a submitted staging buffer again (it resolves once the GPU has read it) and keeps it for a later write. */
  private recycleStaging(b: GPUBuffer): void {
    b.mapAsync(GPUMapMode.WRITE).then(
      () => {
        let free = this.stagingFree.get(b.size);
        if (!free) this.stagingFree.set(b.size, (free = []));
        if (free.length < STAGING_KEEP && !this.destroyed) free.push(b);
        else b.destroy();
      },
      () => b.destroy(), // device lost or destroyed: nothing to keep
    );
  }

  /** Waits for all submitted work; throws the first error any of it raised. */
  async sync(): Promise<void> {
    this.checkLost('sync');
    this.flush();
    await this.device.queue.onSubmittedWorkDone();
    await this.throwPending();
    this.checkLost('sync');
  }

  private async throwPending(): Promise<void> {
    if (!this.pendingErrors.length) return;
    const errs = (await Promise.all(this.pendingErrors.splice(0))).filter((e): e is GpuError => e !== null);
    if (errs.length) throw errs[0];
  }

  /** Throws GpuDeviceLostError once the device is lost or destroyed (`what` names the work refused). */
  checkLost(what: string): void {
    if (this.destroyed) throw new GpuDeviceLostError(`GPU device was destroyed (Gpu.destroy()) before ${what}`);
    if (!this.lostInfo) return;
    throw new GpuDeviceLostError(
      `GPU device lost (${this.lostInfo.reason}: ${this.lostInfo.message}) at ${what}; last batch: [${summarize(this.lastKernels)}]`,
    );
  }

  destroy(): void {
    if (this.destroyed) return;
    this.flush();
    this.pool.trim();
    for (const list of this.stagingFree.values()) for (const b of list) b.destroy();
    this.stagingFree.clear();
    this.bindGroups.clear();
    this.device.destroy();
    this.destroyed = true;
  }
}

/** A released tensor's buffer may already hold another tensor: using it would silently read or clobber that one. */
function expectLive(what: string, t: Tensor): void {
  if (t.isReleased) throw new GpuError(`${what} ${t.label}: the tensor was released`);
}

function summarize(labels: string[]): string {
  const counts = new Map<string, number>();
  for (const l of labels) counts.set(l, (counts.get(l) ?? 0) + 1);
  return [...counts].map(([l, n]) => (n > 1 ? `${l}×${n}` : l)).join(', ');
}

/** Subgroup sizes and subgroup matrix configs from the adapter info (Dawn's fields), for enabled features only. */
async function subgroupInfo(device: GPUDevice, info: GPUAdapterInfo): Promise<Pick<AdapterReport, 'subgroups' | 'subgroupMatrixConfigs' | 'subgroupMatrixRefused'>> {
  const i = info as unknown as { subgroupMinSize?: number; subgroupMaxSize?: number; subgroupMatrixConfigs?: Iterable<SubgroupMatrixConfig> };
  const subgroups = device.features.has('subgroups') && i.subgroupMinSize && i.subgroupMaxSize ? { minSize: i.subgroupMinSize, maxSize: i.subgroupMaxSize } : null;
  const configs = subgroups && device.features.has('chromium-experimental-subgroup-matrix') && i.subgroupMatrixConfigs ? [...i.subgroupMatrixConfigs] : [];
  const refused = configs.length ? await subgroupMatrixSyntax(device) : null;
  return {
    subgroups,
    subgroupMatrixConfigs: refused ? [] : configs.map((c) => ({ componentType: String(c.componentType), resultComponentType: String(c.resultComponentType), M: c.M, N: c.N, K: c.K })),
    subgroupMatrixRefused: refused,
  };
}

/** Null where the shader compiler takes the subgroup matrix loads and stores with their majorness as a template
 * argument (`subgroupMatrixLoad<T, row_major>(p, offset, stride)`), as shaders/matmul_tc_*.wgsl write them; else
 * why not. Dawn took the majorness as a bool argument before (that form now warns "use of deprecated builtin" for
 * every call, on stdout). */
async function subgroupMatrixSyntax(device: GPUDevice): Promise<string | null> {
  if (!device.features.has('shader-f16')) return 'no shader-f16 feature';
  // The constructs those shaders use: aliased types, loads from storage and from workgroup memory (in a function
  // that returns the fragment), a multiply-accumulate, a store to workgroup memory.
  const code = `enable f16;
enable chromium_experimental_subgroup_matrix;
alias Left = subgroup_matrix_left<f16, 8, 8>;
alias Right = subgroup_matrix_right<f16, 8, 8>;
alias Acc = subgroup_matrix_result<f32, 8, 8>;
@group(0) @binding(0) var<storage, read> x: array<f16>;
var<workgroup> tile: array<f16, 64>;
var<workgroup> tileC: array<f32, 64>;
fn fragment(at: u32) -> Right { return subgroupMatrixLoad<Right, col_major>(&tile, at, 8u); }
@compute @workgroup_size(64)
fn main() {
  let a = subgroupMatrixLoad<Left, row_major>(&x, 0u, 8u);
  let c = subgroupMatrixMultiplyAccumulate(a, fragment(0u), Acc());
  subgroupMatrixStore<row_major>(&tileC, 0u, c, 8u);
}`;
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code, label: 'subgroup matrix syntax probe' });
  const [error, compiled] = await Promise.all([device.popErrorScope(), module.getCompilationInfo()]);
  const message = compiled.messages.find((m) => m.type === 'error')?.message ?? error?.message;
  return message ? `the shader compiler lacks subgroupMatrixLoad<T, row_major>(p, offset, stride): ${message.split('\n')[0]}` : null;
}
