// Host-side cost of a dispatch, in microseconds, split into where it goes: recording (troupe's
// dispatch(): pipeline lookup, uniforms, bind group, pass calls), the submit, and the wait for the GPU;
// with and without the bind group cache; and the WebGPU calls alone (createBindGroup, a 16-byte
// writeBuffer, an empty submit, a 4-byte mapAsync round trip). Small dispatches are where Deno/wgpu
// was 20x slower than Dawn on the H200 (a 1x3072x1024 matmul: 0.6 ms vs 30 us, 2026-12-01): these rows
// say which part. No PyTorch baseline (there is no such split there).
// gpu_us_per_dispatch_* is the GPU's side: N tiny dispatches recorded in one pass, timed by the pass's
// own timestamps (falling back to wall clock around one submit without timestamp-query), either each
// reading the previous one's output (dependent: Dawn puts a barrier between them) or each writing a
// buffer of its own (independent). It is the floor under every decode step's ~400 dispatches.
import type { Gpu } from '../src/gpu/gpu.ts';
import type { Tensor } from '../src/gpu/tensor.ts';
import { scale } from '../src/kernels/elementwise.ts';
import { matmul } from '../src/kernels/matmul.ts';
import { benchRow, type BenchRow } from './results.ts';

const now = () => performance.now();

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

interface Case {
  name: string;
  setup(gpu: Gpu): { run(): Tensor; tensors: Tensor[] };
}

function randomTensor(gpu: Gpu, shape: number[], seed: number, label: string): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = ((s >>> 8) + 0.5) / (1 << 23) - 1;
  }
  return gpu.upload(v, shape, 'f32', label);
}

const CASES = (quick: boolean): Case[] => [
  {
    name: 'scale_f32_1024',
    setup(gpu) {
      const a = randomTensor(gpu, [1024], 1, 'a');
      return { run: () => scale(gpu, a, 1.5), tensors: [a] };
    },
  },
  {
    name: quick ? 'matmul_f32_xWt_1x96x64' : 'matmul_f32_xWt_1x3072x1024',
    setup(gpu) {
      const [N, K] = quick ? [96, 64] : [3072, 1024];
      const x = randomTensor(gpu, [1, K], 2, 'x');
      const w = randomTensor(gpu, [N, K], 3, 'w');
      return { run: () => matmul(gpu, x, w, { transB: true, label: 'mm' }), tensors: [x, w] };
    },
  },
];

/** GPU time of one tiny dispatch (1024-element scale) among `n` in one pass, us. */
async function gpuTimePerDispatch(gpu: Gpu, n: number, dependent: boolean): Promise<number> {
  const d = gpu.device;
  const pipeline = gpu.pipeline('elementwise', 'scale', { aliases: { T: 'f32' } });
  const layout = pipeline.getBindGroupLayout(0);
  const u = d.createBuffer({ size: 256, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  d.queue.writeBuffer(u, 0, new Uint32Array([1024, new Uint32Array(new Float32Array([1.0001]).buffer)[0]!, 1, 0]));
  const size = 4096;
  const make = () => d.createBuffer({ size, usage: GPUBufferUsage.STORAGE });
  const buffers = dependent ? [make(), make()] : Array.from({ length: n + 1 }, make);
  const groups = Array.from({ length: n }, (_, i) => {
    const [src, dst] = dependent ? [buffers[i % 2]!, buffers[(i + 1) % 2]!] : [buffers[0]!, buffers[i + 1]!];
    return d.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: u, offset: 0, size: 16 } }, { binding: 1, resource: { buffer: src } }, { binding: 3, resource: { buffer: dst } }] });
  });
  const timestamps = gpu.has('timestamp-query');
  const set = timestamps ? d.createQuerySet({ type: 'timestamp', count: 2 }) : null;
  const resolved = d.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const read = d.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const times: number[] = [];
  for (let r = 0; r < 4; r++) {
    const e = d.createCommandEncoder();
    const pass = e.beginComputePass(set ? { timestampWrites: { querySet: set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {});
    pass.setPipeline(pipeline);
    for (const g of groups) {
      pass.setBindGroup(0, g);
      pass.dispatchWorkgroups(4);
    }
    pass.end();
    if (set) {
      e.resolveQuerySet(set, 0, 2, resolved, 0);
      e.copyBufferToBuffer(resolved, 0, read, 0, 16);
    }
    const commands = e.finish();
    const t0 = now();
    d.queue.submit([commands]);
    await d.queue.onSubmittedWorkDone();
    const wall = (now() - t0) * 1000;
    if (set) {
      await read.mapAsync(GPUMapMode.READ);
      const [begin, end] = new BigUint64Array(read.getMappedRange().slice(0));
      read.unmap();
      times.push(Number(end! - begin!) / 1000);
    } else {
      times.push(wall);
    }
  }
  for (const b of [...buffers, u, resolved, read]) b.destroy();
  set?.destroy();
  return median(times.slice(1)) / n;
}

export async function benchDispatch(gpu: Gpu, opts: { quick: boolean; filter?: string }): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const n = opts.quick ? 20 : 500;
  const repeats = opts.quick ? 2 : 5;
  const wanted = (name: string) => !opts.filter || name.includes(opts.filter);
  const saved = gpu.cacheBindGroups;
  try {
    for (const c of CASES(opts.quick)) {
      const { run, tensors } = c.setup(gpu);
      for (const cache of [true, false]) {
        const tag = `${c.name}_${cache ? 'cached' : 'uncached'}_bindgroups`;
        if (!wanted(`dispatch_total_us_${tag}`)) continue;
        gpu.cacheBindGroups = cache;
        const record: number[] = [];
        const submit: number[] = [];
        const total: number[] = [];
        for (let r = 0; r <= repeats; r++) {
          const t0 = now();
          // Each output released at once, as a model's activations are: the pool hands the same buffer back.
          for (let i = 0; i < n; i++) run().release();
          const t1 = now();
          gpu.flush();
          const t2 = now();
          await gpu.sync();
          const t3 = now();
          if (r === 0) continue; // warm-up: pipelines, first bind groups
          record.push(((t1 - t0) * 1000) / n);
          submit.push(((t2 - t1) * 1000) / n);
          total.push(((t3 - t0) * 1000) / n);
        }
        rows.push(benchRow(gpu, `dispatch_record_us_${tag}`, median(record), 'us'));
        rows.push(benchRow(gpu, `dispatch_submit_us_${tag}`, median(submit), 'us'));
        rows.push(benchRow(gpu, `dispatch_total_us_${tag}`, median(total), 'us'));
      }
      for (const t of tensors) t.release();
    }
    gpu.cacheBindGroups = saved;
    for (const dependent of [true, false]) {
      const name = `gpu_us_per_dispatch_${dependent ? 'dependent' : 'independent'}_scale_f32_1024`;
      if (wanted(name)) rows.push(benchRow(gpu, name, await gpuTimePerDispatch(gpu, n * 2, dependent), 'us'));
    }
    // The WebGPU calls alone.
    const d = gpu.device;
    if (wanted('webgpu_')) {
      const pipeline = gpu.pipeline('elementwise', 'scale', { aliases: { T: 'f32' } });
      const a = randomTensor(gpu, [1024], 4, 'a');
      const o = gpu.tensor([1024], 'f32', 'o');
      const u = d.createBuffer({ size: 256, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      const layout = pipeline.getBindGroupLayout(0);
      const entries: GPUBindGroupEntry[] = [
        { binding: 0, resource: { buffer: u, offset: 0, size: 16 } },
        { binding: 1, resource: { buffer: a.buffer } },
        { binding: 3, resource: { buffer: o.buffer } },
      ];
      const timeEach = (f: () => void): number => {
        const xs: number[] = [];
        for (let r = 0; r <= repeats; r++) {
          const t0 = now();
          for (let i = 0; i < n; i++) f();
          if (r) xs.push(((now() - t0) * 1000) / n);
        }
        return median(xs);
      };
      rows.push(benchRow(gpu, 'webgpu_create_bind_group_us', timeEach(() => void d.createBindGroup({ layout, entries })), 'us'));
      const bytes = new Uint8Array(16);
      rows.push(benchRow(gpu, 'webgpu_write_buffer_16B_us', timeEach(() => d.queue.writeBuffer(u, 0, bytes)), 'us'));
      const bg = d.createBindGroup({ layout, entries });
      rows.push(
        benchRow(
          gpu,
          'webgpu_encode_dispatch_us',
          timeEach(() => {
            const e = d.createCommandEncoder();
            const p = e.beginComputePass();
            p.setPipeline(pipeline);
            p.setBindGroup(0, bg);
            p.dispatchWorkgroups(4);
            p.end();
            d.queue.submit([e.finish()]);
          }),
          'us',
        ),
      );
      rows.push(benchRow(gpu, 'webgpu_submit_empty_us', timeEach(() => d.queue.submit([d.createCommandEncoder().finish()])), 'us'));
      await d.queue.onSubmittedWorkDone();
      const read = d.createBuffer({ size: 256, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const maps: number[] = [];
      for (let r = 0; r <= repeats * 4; r++) {
        const t0 = now();
        const e = d.createCommandEncoder();
        e.copyBufferToBuffer(o.buffer, 0, read, 0, 4);
        d.queue.submit([e.finish()]);
        await read.mapAsync(GPUMapMode.READ);
        read.unmap();
        if (r) maps.push((now() - t0) * 1000);
      }
      rows.push(benchRow(gpu, 'webgpu_copy_map_roundtrip_us', median(maps), 'us'));
      const dones: number[] = [];
      for (let r = 0; r <= repeats * 4; r++) {
        const t0 = now();
        d.queue.submit([d.createCommandEncoder().finish()]);
        await d.queue.onSubmittedWorkDone();
        if (r) dones.push((now() - t0) * 1000);
      }
      // Under Deno 2.9 both waits take about 11 ms whatever the work (deno_webgpu polls, then sleeps 10 ms).
      rows.push(benchRow(gpu, 'webgpu_on_submitted_work_done_us', median(dones), 'us'));
      const ticks: number[] = [];
      for (let r = 0; r <= repeats * 4; r++) {
        const t0 = now();
        await new Promise((res) => setTimeout(res, 0));
        if (r) ticks.push((now() - t0) * 1000);
      }
      rows.push(benchRow(gpu, 'js_set_timeout_0_us', median(ticks), 'us'));
      read.destroy();
      u.destroy();
      a.release();
      o.release();
    }
  } finally {
    gpu.cacheBindGroups = saved;
  }
  return rows;
}
