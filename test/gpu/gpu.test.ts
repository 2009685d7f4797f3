// The GPU layer itself: errors that name the kernel or buffer, the buffer pool and its counters,
// uniform packing (also across many dispatches of one batch), a destroyed device, disabled features.
import { describe, expect, it } from 'vitest';
import { GpuDeviceLostError, GpuError, GpuLimitError, GpuValidationError } from '../../src/gpu/errors.ts';
import { Gpu, variantHeader, WANTED_FEATURES } from '../../src/gpu/gpu.ts';
import { sizeClass } from '../../src/gpu/pool.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import { u32s, Uniforms } from '../../src/gpu/uniforms.ts';
import { add, scale } from '../../src/kernels/elementwise.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/random.ts';
import { addRef, scaleRef } from '../ref/elementwise.ts';

describe('gpu errors', () => {
  it('WGSL that does not compile -> GpuValidationError naming the shader and entry point', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(8, 1), [8], 'f32', 'a');
    const out = gpu.tensor([8], 'f32', 'out');
    // An alias to a type that does not exist: the module fails to compile.
    gpu.dispatch({ shader: 'elementwise', entry: 'add', variant: { aliases: { T: 'vec5<f32>' } }, uniforms: u32s(8, 0, 1, 0), bindings: [a, a, out], workgroups: [1], label: 'broken_add' });
    await expect(gpu.sync()).rejects.toThrow(GpuValidationError);
    gpu.dispatch({ shader: 'elementwise', entry: 'add', variant: { aliases: { T: 'vec5<f32>' } }, uniforms: u32s(8, 0, 1, 0), bindings: [a, a, out], workgroups: [1] });
    await expect(gpu.sync()).rejects.toThrow(/elementwise:add/);
  });

  it('an entry point that does not exist -> GpuValidationError naming it', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(8, 2), [8], 'f32', 'a');
    gpu.dispatch({ shader: 'elementwise', entry: 'no_such_entry', variant: { aliases: { T: 'f32' } }, bindings: [a], workgroups: [1] });
    await expect(gpu.sync()).rejects.toThrow(/elementwise:no_such_entry/);
  });

  it('an unknown shader -> GpuError naming it', async () => {
    const gpu = await testGpu();
    expect(() => gpu.dispatch({ shader: 'no_such_shader', bindings: [], workgroups: [1] })).toThrow(/no_such_shader/);
  });

  it('a batch that fails validation names its kernels, and the Gpu stays usable', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(64, 3), [64], 'f32', 'aliased');
    // The same buffer bound read-only and writable in one dispatch is a validation error on Dawn and wgpu.
    add(gpu, a, a, a);
    const err = await gpu.sync().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GpuValidationError);
    expect((err as Error).message).toMatch(/\badd\b/);
    const x = randn(100, 4);
    const y = randn(100, 5);
    const sum = add(gpu, gpu.upload(x, [100], 'f32', 'x'), gpu.upload(y, [100], 'f32', 'y'));
    expect(await gpu.readF32(sum)).toEqual(addRef(x, y));
  });

  it('workgroups over the limit -> GpuLimitError naming the kernel', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(8, 6), [8], 'f32', 'a');
    const over = gpu.limits.maxComputeWorkgroupsPerDimension + 1;
    expect(() => gpu.dispatch({ shader: 'elementwise', entry: 'scale', variant: { aliases: { T: 'f32' } }, uniforms: u32s(8, 0, 1, 0), bindings: [a, null, a], workgroups: [1, over], label: 'huge_scale' })).toThrow(
      GpuLimitError,
    );
    expect(() => gpu.dispatch({ shader: 'elementwise', entry: 'scale', bindings: [a, null, a], workgroups: [over], label: 'huge_scale' })).toThrow(/huge_scale/);
  });

  it('a binding over maxStorageBufferBindingSize -> GpuLimitError naming the kernel and buffer', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(8, 7), [8], 'f32', 'small');
    const size = gpu.limits.maxStorageBufferBindingSize + 4;
    const bind = () => gpu.dispatch({ shader: 'elementwise', entry: 'scale', variant: { aliases: { T: 'f32' } }, bindings: [{ buffer: a.buffer, size }, null, a], workgroups: [1], label: 'wide_scale' });
    expect(bind).toThrow(GpuLimitError);
    expect(bind).toThrow(/wide_scale.*binding 1.*small/);
  });

  it('a tensor over maxBufferSize -> GpuLimitError naming the buffer', async () => {
    const gpu = await testGpu();
    const n = Math.floor(gpu.limits.maxBufferSize / 4) + 1024;
    expect(() => gpu.tensor([n], 'f32', 'giant_weights')).toThrow(GpuLimitError);
    expect(() => gpu.tensor([n], 'f32', 'giant_weights')).toThrow(/giant_weights/);
  });

  it('binding a released tensor -> GpuError naming the kernel and tensor', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(8, 8), [8], 'f32', 'freed_tensor');
    const b = gpu.upload(randn(8, 9), [8], 'f32', 'b');
    a.release();
    expect(() => add(gpu, a, b)).toThrow(GpuError);
    expect(() => add(gpu, a, b)).toThrow(/add.*freed_tensor.*released/);
    // Its buffer may already belong to another tensor: reads, writes and copies are refused too.
    await expect(gpu.read(a)).rejects.toThrow(/freed_tensor.*released/);
    expect(() => gpu.write(a, randn(8, 10))).toThrow(/freed_tensor.*released/);
    expect(() => gpu.copy(b, a)).toThrow(/freed_tensor.*released/);
    expect(() => gpu.copy(a, b)).toThrow(/freed_tensor.*released/);
  });

  it('writes past the end and reads of the wrong dtype name the tensor', async () => {
    const gpu = await testGpu();
    const t = gpu.tensor([4], 'f32', 'four');
    expect(() => gpu.write(t, new Float32Array(1000))).toThrow(/four/);
    const ids = gpu.upload(new Uint32Array([1, 2, 3]), [3], 'u32', 'ids');
    await expect(gpu.readF32(ids)).rejects.toThrow(/ids/);
    expect(Array.from(await gpu.read(ids))).toEqual([1, 2, 3]);
  });
});

describe('buffer pool', () => {
  it('reuses a released buffer of the same size class and counts bytes', async () => {
    const gpu = await testGpu();
    const m = gpu.memory;
    const bytes = sizeClass(1000 * 4);
    const before = { live: m.liveBytes, pooled: m.pooledBytes, buffers: m.buffers };
    const t1 = gpu.tensor([1000], 'f32', 'first');
    expect(m.liveBytes - before.live).toBe(bytes);
    const buffer = t1.buffer;
    t1.release();
    t1.release(); // a second release is a no-op
    expect(m.liveBytes).toBe(before.live);
    expect(m.pooledBytes - before.pooled).toBe(bytes);
    const buffersAfterFirst = m.buffers;
    const t2 = gpu.tensor([999], 'f32', 'second'); // same size class
    expect(t2.buffer).toBe(buffer);
    expect(m.buffers).toBe(buffersAfterFirst);
    expect(m.pooledBytes).toBe(before.pooled);
    expect(m.peakBytes).toBeGreaterThanOrEqual(m.liveBytes + m.pooledBytes);
    const t3 = gpu.tensor([1000], 'f32', 'third'); // nothing free of that class: a new buffer
    expect(t3.buffer).not.toBe(buffer);
    expect(m.buffers).toBe(buffersAfterFirst + 1);
    // A reused buffer holds what is written to it, not the old contents.
    const x = randn(999, 10);
    gpu.write(t2, x);
    expect(await gpu.readF32(t2)).toEqual(x);
    t2.release();
    t3.release();
  });

  it('size classes round up by at most 1/8 and trim destroys pooled buffers', async () => {
    for (const n of [1, 255, 256, 257, 65536, 65537, 1_000_003, 123_456_789]) {
      const c = sizeClass(n);
      expect(c).toBeGreaterThanOrEqual(n);
      expect(c % 4).toBe(0);
      if (n > 65536) expect(c / n).toBeLessThanOrEqual(1.125);
    }
    const gpu = await Gpu.create();
    gpu.tensor([5000], 'f32', 'kept');
    gpu.tensor([7000], 'f32', 'dropped').release();
    expect(gpu.memory.buffers).toBe(2);
    gpu.pool.trim();
    expect(gpu.memory.buffers).toBe(1);
    expect(gpu.memory.pooledBytes).toBe(0);
    expect(gpu.memory.liveBytes).toBe(sizeClass(5000 * 4));
    gpu.destroy();
  });
});

describe('uniforms', () => {
  it('packs 4-byte scalars little-endian in order, padded to 16 bytes', () => {
    const bytes = new Uniforms().u32(7).f32(-1.5).i32(-3).u32(0xffffffff).u32(9).bytes();
    expect(bytes.length).toBe(32);
    const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    expect(v.getUint32(0, true)).toBe(7);
    expect(v.getFloat32(4, true)).toBe(-1.5);
    expect(v.getInt32(8, true)).toBe(-3);
    expect(v.getUint32(12, true)).toBe(0xffffffff);
    expect(v.getUint32(16, true)).toBe(9);
    expect(new Uniforms().bytes().length).toBe(16);
    expect(u32s(1, 2, 3).bytes().length).toBe(16);
  });

  it('holds any number of fields, and writes them with zeroed padding where it is told', () => {
    const u = new Uniforms();
    for (let i = 0; i < 21; i++) u.u32(i * 3 + 1);
    const bytes = u.bytes();
    expect(bytes.length).toBe(96);
    const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    expect(Array.from({ length: 21 }, (_, i) => v.getUint32(4 * i, true))).toEqual(Array.from({ length: 21 }, (_, i) => i * 3 + 1));
    expect(u32s(...Array.from({ length: 70 }, (_, i) => i)).bytes().length).toBe(288);
    const dst = new Uint32Array(12).fill(0xdeadbeef);
    new Uniforms().f32(1).i32(-2).writeTo(dst, 4);
    expect([...dst]).toEqual([0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0x3f800000, 0xfffffffe, 0, 0, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef]);
  });

  it('rejects values a u32 or i32 cannot hold', () => {
    expect(() => new Uniforms().u32(-1)).toThrow(RangeError);
    expect(() => new Uniforms().u32(2 ** 32)).toThrow(RangeError);
    expect(() => new Uniforms().u32(1.5)).toThrow(RangeError);
    expect(() => new Uniforms().i32(0.5)).toThrow(RangeError);
    expect(() => new Uniforms().i32(2 ** 31)).toThrow(RangeError);
  });

  it('every dispatch of a batch sees its own uniforms (more than one 64 KiB chunk)', async () => {
    const gpu = await testGpu();
    const n = 33;
    const x = randn(n, 11);
    const src = gpu.upload(x, [n], 'f32', 'src');
    // 300 dispatches x 256-byte offset alignment > 64 KiB: the batch spills into a second uniform chunk.
    const factors = Array.from({ length: 300 }, (_, i) => 0.5 + i / 64);
    const outs = factors.map((f, i) => scale(gpu, src, f, gpu.tensor([n], 'f32', `scaled${i}`)));
    const want = factors.map((f) => scaleRef(x, f));
    for (const i of [0, 1, 150, 255, 256, 299]) {
      const got = await gpu.readF32(outs[i]!);
      for (let j = 0; j < n; j++) expect(got[j]!).toBeCloseTo(want[i]![j]!, 5);
    }
    for (const o of outs) o.release();
  });

  it('variant headers: enables, aliases and constants', () => {
    expect(variantHeader({ aliases: { T: 'f16' }, consts: { TILE: 16, SCALE: 0.5, FAST: true } })).toBe(
      'enable f16;\nalias T = f16;\nconst TILE = 16;\nconst SCALE = 0.5f;\nconst FAST = true;\n',
    );
    expect(variantHeader(undefined)).toBe('');
  });
});

describe('device', () => {
  it('use after destroy() -> GpuDeviceLostError', async () => {
    const gpu = await Gpu.create();
    const t = gpu.upload(randn(16, 12), [16], 'f32', 'survivor');
    gpu.destroy();
    expect(() => gpu.tensor([4], 'f32', 'late')).toThrow(GpuDeviceLostError);
    expect(() => scale(gpu, t, 2)).toThrow(GpuDeviceLostError);
    await expect(gpu.read(t)).rejects.toThrow(GpuDeviceLostError);
    await expect(gpu.sync()).rejects.toThrow(/destroy/);
  });

  it('shader-f16 can be disabled', async () => {
    const gpu = await testGpu();
    expect(gpu.f16).toBe(gpu.adapter.features.has('shader-f16'));
    const no16 = await Gpu.create({ disable: ['shader-f16'] });
    expect(no16.f16).toBe(false);
    expect(no16.report.features).not.toContain('shader-f16');
    // f32 kernels still run on it.
    const x = randn(50, 13);
    expect(await no16.readF32(scale(no16, no16.upload(x, [50], 'f32', 'x'), 3))).toEqual(scaleRef(x, 3));
    no16.destroy();
  });
});

describe('bind group cache and writes inside a batch', () => {
  it('a repeated dispatch reuses its bind group; a reused buffer holding another tensor gives that tensor\'s results', async () => {
    const gpu = await Gpu.create();
    const x = randn(300, 21);
    const y = randn(300, 22);
    const a = gpu.upload(x, [300], 'f32', 'a');
    const b = gpu.upload(y, [300], 'f32', 'b');
    const first = add(gpu, a, b);
    expect(await gpu.readF32(first)).toEqual(addRef(x, y));
    first.release();
    const misses = gpu.bindGroupStats.misses;
    // Same shapes: the pool hands back the same buffer for the output, the uniforms land at the same offset.
    const again = add(gpu, a, b);
    expect(gpu.bindGroupStats.misses).toBe(misses);
    expect(await gpu.readF32(again)).toEqual(addRef(x, y));
    again.release();
    // a's buffer now holds other data under another tensor: the cached bind group sees the new data.
    a.release();
    const z = randn(300, 23);
    const c = gpu.upload(z, [300], 'f32', 'c');
    expect(c.buffer).toBe(a.buffer);
    const third = add(gpu, c, b);
    expect(await gpu.readF32(third)).toEqual(addRef(z, y));
    // Different uniforms (scale factors) and bindings still give each dispatch its own result.
    const outs = [1, 2, 3].map((k) => scale(gpu, third, k));
    const got = await Promise.all(outs.map((o) => gpu.readF32(o)));
    got.forEach((g, k) => expect(g).toEqual(scaleRef(addRef(z, y), k + 1)));
    gpu.destroy();
  });

  it('buffers destroyed by trim() leave the cache; new buffers work', async () => {
    const gpu = await Gpu.create();
    const x = randn(64, 24);
    const y = randn(64, 25);
    for (let round = 0; round < 2; round++) {
      const a = gpu.upload(x, [64], 'f32', 'a');
      const b = gpu.upload(y, [64], 'f32', 'b');
      const s = add(gpu, a, b);
      expect(await gpu.readF32(s)).toEqual(addRef(x, y));
      for (const t of [a, b, s]) t.release();
      const before = gpu.bindGroupCacheSize;
      gpu.pool.trim();
      expect(gpu.bindGroupCacheSize).toBeLessThan(before);
    }
    await gpu.sync();
    gpu.destroy();
  });

  it('discardBatch drops the open batch unsubmitted and counts its commands; later batches run', async () => {
    const gpu = await Gpu.create();
    const x = randn(50, 29);
    const a = gpu.upload(x, [50], 'f32', 'a');
    const out = gpu.upload(new Float32Array(50), [50], 'f32', 'out');
    await gpu.sync();
    scale(gpu, a, 3, out);
    gpu.write(a, randn(50, 30)); // a is in use: a staged write, dropped too
    expect(gpu.discardBatch()).toBe(2);
    expect(gpu.discardBatch()).toBe(0);
    expect(await gpu.readF32(out)).toEqual(new Float32Array(50));
    expect(await gpu.readF32(a)).toEqual(x);
    scale(gpu, a, 2, out);
    expect(await gpu.readF32(out)).toEqual(scaleRef(x, 2));
    gpu.destroy();
  });

  it('writes recorded in an open batch keep program order, whether the buffer is in use or not', async () => {
    const gpu = await Gpu.create();
    const x = randn(100, 26);
    const y = randn(100, 27);
    const w = randn(100, 28);
    const a = gpu.upload(x, [100], 'f32', 'a');
    const b = gpu.upload(y, [100], 'f32', 'b');
    const s1 = add(gpu, a, b); // the batch is open and uses a
    gpu.write(a, w); // a is in use: staged, after s1
    const fresh = gpu.tensor([100], 'f32', 'fresh');
    gpu.write(fresh, x); // unused in the batch: straight to the queue
    const s2 = add(gpu, a, fresh);
    gpu.write(fresh, y); // now in use: after s2
    const s3 = add(gpu, fresh, b);
    expect(await gpu.readF32(s1)).toEqual(addRef(x, y));
    expect(await gpu.readF32(s2)).toEqual(addRef(w, x));
    expect(await gpu.readF32(s3)).toEqual(addRef(y, y));
    gpu.destroy();
  });
});

describe('staged writes', () => {
  it('reuse their staging buffers once the GPU has read them, and every round reads what it wrote', async () => {
    const gpu = await Gpu.create();
    let prev = randn(64, 30);
    const bv = randn(64, 31);
    const a = gpu.upload(prev, [64], 'f32', 'a');
    const b = gpu.upload(bv, [64], 'f32', 'b');
    for (let round = 0; round < 6; round++) {
      const v1 = randn(64, 40 + round);
      const v2 = randn(64, 50 + round);
      const s1 = add(gpu, a, b); // a in use: both writes below are staged, each in its own buffer
      gpu.write(a, v1);
      const s2 = add(gpu, a, b);
      gpu.write(a, v2);
      const s3 = add(gpu, a, b);
      expect(await gpu.readF32(s1)).toEqual(addRef(prev, bv));
      expect(await gpu.readF32(s2)).toEqual(addRef(v1, bv));
      expect(await gpu.readF32(s3)).toEqual(addRef(v2, bv));
      for (const t of [s1, s2, s3]) t.release();
      prev = v2;
      await gpu.sync();
    }
    // Two buffers a round; after the first rounds they come back mapped and are written again.
    expect(gpu.stagingStats.created + gpu.stagingStats.reused).toBe(12);
    expect(gpu.stagingStats.reused).toBeGreaterThan(0);
    gpu.destroy();
  });
});

describe('features', () => {
  it('enables only the features kernels use; the report also lists what the adapter offers', async () => {
    // subgroups + subgroup matrix: the tensor-core matmul (src/kernels/matmul-tc.ts)
    expect([...WANTED_FEATURES]).toEqual(['shader-f16', 'timestamp-query', 'subgroups', 'chromium-experimental-subgroup-matrix']);
    const gpu = await testGpu();
    const r = gpu.report;
    for (const f of r.features) expect(r.adapterFeatures).toContain(f);
    for (const f of r.features.filter((x) => x !== 'core-features-and-limits')) expect(WANTED_FEATURES as readonly string[]).toContain(f);
    expect(r.subgroups !== null).toBe(r.features.includes('subgroups'));
    if (!r.features.includes('chromium-experimental-subgroup-matrix')) expect(r.subgroupMatrixConfigs).toEqual([]);
  });
});

describe('buffer pool order', () => {
  it('an acquire gets the oldest free buffer of its class, whatever order they were released in', async () => {
    const gpu = await testGpu();
    const ts = [0, 1, 2].map((i) => gpu.tensor([100], 'f32', `t${i}`));
    const bufs = ts.map((t) => t.buffer);
    for (const order of [[0, 1, 2], [2, 0, 1], [1, 2, 0]]) {
      const held = order.map((i) => new Tensor(gpu, bufs[i]!, [100], 'f32', `h${i}`));
      held.forEach((h) => h.release());
      // The pool may hold other free buffers of this class from earlier tests: ours come out in creation order.
      const got: GPUBuffer[] = [];
      const taken: Tensor[] = [];
      while (got.length < 3) {
        const t = gpu.tensor([100], 'f32', 'again');
        taken.push(t);
        if (bufs.includes(t.buffer)) got.push(t.buffer);
      }
      expect(got).toEqual(bufs);
      for (const t of taken) if (!bufs.includes(t.buffer)) t.release();
    }
  });
});
