// Live charts of the app: the report's chart specs (src/metrics/charts.ts) drawn with the same drawChart,
// updated in place (uPlot setData) as records arrive; a chart is rebuilt only when its series change
// (a role appears).
import uPlot from 'uplot';
import { allCharts, drawChart, type ChartSpec, type UPlotCtor, type UPlotLike } from '../metrics/charts.ts';
import type { MetricsRecord } from '../metrics/schema.ts';

const HEIGHT = 210;

interface Slot {
  box: HTMLElement;
  plot: UPlotLike | null;
  key: string;
}

export class LiveCharts {
  private readonly slots = new Map<string, Slot>();
  private readonly resize: ResizeObserver;

  constructor(private readonly container: HTMLElement) {
    this.resize = new ResizeObserver(() => {
      for (const s of this.slots.values()) s.plot?.setSize({ width: this.width(s.box), height: HEIGHT });
    });
    this.resize.observe(container);
  }

  private width(box: HTMLElement): number {
    return Math.max(280, box.clientWidth - 12);
  }

  /** Draws (or updates) every chart from the records so far. */
  update(records: readonly MetricsRecord[]): void {
    for (const spec of allCharts(records)) this.updateOne(spec);
  }

  private updateOne(spec: ChartSpec): void {
    let slot = this.slots.get(spec.id);
    if (!slot) {
      const box = document.createElement('div');
      box.className = 'chart';
      box.dataset.chart = spec.id;
      this.container.append(box);
      slot = { box, plot: null, key: '' };
      this.slots.set(spec.id, slot);
    }
    const empty = spec.x.length === 0 || spec.series.length === 0;
    const key = spec.series.map((s) => s.label).join('\n');
    slot.box.dataset.points = String(spec.x.length);
    slot.box.dataset.series = spec.series.map((s) => s.label).join(', ');
    if (empty) {
      slot.plot?.destroy();
      slot.plot = null;
      slot.key = '';
      slot.box.replaceChildren(Object.assign(document.createElement('div'), { className: 'empty', textContent: `${spec.title}: no data yet` }));
      return;
    }
    if (slot.plot && slot.key === key) {
      slot.plot.setData([spec.x, ...spec.series.map((s) => s.values)]);
      return;
    }
    slot.plot?.destroy();
    slot.box.replaceChildren();
    slot.plot = drawChart(uPlot as unknown as UPlotCtor, slot.box, spec, this.width(slot.box), HEIGHT);
    slot.key = key;
  }

  clear(): void {
    for (const s of this.slots.values()) s.plot?.destroy();
    this.slots.clear();
    this.container.replaceChildren();
  }
}
