// Workgroup reductions by subgroup shuffles: the consts that kernels with `#if SGR` blocks take (matmul_rows.wgsl;
// decode attention's trees had them too, and ran 0.95x at 256 sequences on an H100, 2026-12-07, so they went). Lanes
// a shuffle may span are the least subgroup size the adapter reports, at most 32, so that an xor within an aligned
// block of that many invocations never leaves a subgroup whatever size it runs at.
import type { Gpu, ShaderVariant } from '../gpu/gpu.ts';

/** SGR: shuffles are compiled in; SGL: lanes they span (1 where the device has no subgroups). */
export interface ShuffleConsts {
  SGR: boolean;
  SGL: number;
}

export function shuffleConsts(gpu: Gpu): ShuffleConsts {
  const lanes = Math.min(32, gpu.report.subgroups?.minSize ?? 1);
  const shuffles = lanes > 1 && (lanes & (lanes - 1)) === 0;
  return { SGR: shuffles, SGL: shuffles ? lanes : 1 };
}

/** The `enable`s a variant with these consts needs. */
export function shuffleEnables(c: ShuffleConsts): NonNullable<ShaderVariant['enables']> {
  return c.SGR ? ['subgroups'] : [];
}
