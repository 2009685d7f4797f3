// The row every benchmark produces (bench/results.json holds them, joined with PyTorch baselines by
// bench/compare.ts), and the helpers that fill in where and when it was measured.
import { type Gpu, WANTED_FEATURES } from '../src/gpu/gpu.ts';
import { ceilingOf } from './ceilings.ts';

export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  /** The same benchmark's value in PyTorch on the same machine. */
  baseline?: number;
  /** value / baseline. */
  ratio?: number;
  /** ISO time of the measurement. */
  date: string;
  machine: string;
  /** node (Dawn), deno (wgpu) or browser. */
  runtime?: string;
  /** Optional features the adapter has that this run left off (`troupe bench --disable`). */
  disabled?: string[];
  /** The commit measured (short hash), filled in when the rows are recorded in bench/results.json. */
  commit?: string;
  /** The hardware's ceiling for this row, same unit (bench/ceilings.ts), and value / ceiling. */
  ceiling?: number;
  ofCeiling?: number;
}

/** The adapter in words, e.g. "nvidia hopper NVIDIA H200" or "google swiftshader (SwiftShader)". */
export function machineName(gpu: Gpu): string {
  const r = gpu.report;
  const words = [r.vendor, r.architecture, r.device || r.description].filter(Boolean).join(' ');
  return (words || 'unknown adapter') + (r.cpuDriver ? ` (${r.cpuDriver})` : '');
}

export function benchRow(gpu: Gpu, name: string, value: number, unit: string): BenchRow {
  const machine = machineName(gpu);
  const row: BenchRow = { name, value, unit, date: new Date().toISOString(), machine, runtime: gpu.report.runtime };
  const disabled = gpu.report.adapterFeatures.filter((f) => (WANTED_FEATURES as readonly string[]).includes(f) && !gpu.report.features.includes(f));
  if (disabled.length) row.disabled = disabled;
  const ceiling = ceilingOf(machine, name, unit);
  if (ceiling !== undefined) Object.assign(row, { ceiling, ofCeiling: value / ceiling });
  return row;
}
