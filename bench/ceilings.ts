// The hardware ceiling of a benchmark row on machines whose spec sheet troupe knows: what a GB/s row would reach
// at full memory bandwidth, what a GFLOP/s row would reach at the peak of the units it runs on (tensor cores
// for the tensor-core matmul rows, f32 FMA for the rest). WebGPU does not report these, so they are matched by
// the adapter's name; rows of other machines (and tokens/s rows) carry none.
export interface MachineCeilings {
  /** How the adapter's name (bench/results.ts machineName) shows it is this machine. */
  match: RegExp;
  /** Memory bandwidth, GB/s. */
  memoryGBs: number;
  /** Dense f16/bf16 tensor-core peak, GFLOP/s. */
  tensorGflops: number;
  /** f32 FMA peak (no tensor cores), GFLOP/s. */
  f32Gflops: number;
  source: string;
}

export const MACHINE_CEILINGS: readonly MachineCeilings[] = [
  { match: /h200/i, memoryGBs: 4800, tensorGflops: 989_500, f32Gflops: 67_000, source: 'NVIDIA H200 SXM spec sheet (dense, no sparsity)' },
];

/** The ceiling of a row (same unit as its value), or undefined where none is known. */
export function ceilingOf(machine: string, name: string, unit: string): number | undefined {
  const m = MACHINE_CEILINGS.find((c) => c.match.test(machine));
  if (!m) return undefined;
  if (unit === 'GB/s') return m.memoryGBs;
  if (unit === 'GFLOP/s') return name.startsWith('matmul_tc') ? m.tensorGflops : m.f32Gflops;
  return undefined;
}
