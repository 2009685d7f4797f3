// Progress of a long CLI run on stderr: on a terminal, one bar redrawn in place with the rate and an
// ETA; otherwise (a log file, a pipe, CI) one plain line each time another 10% is done or 5 s have
// passed, so logs stay short but a stalled run is visible. `generate --n`, `bench` and the trainer use it.

export interface ProgressStream {
  write(s: string): unknown;
  isTTY?: boolean;
}

export interface ProgressOptions {
  label: string;
  /** Units of work in all (> 0); tick() counts them. */
  total: number;
  /** Where to draw (default process.stderr, or nothing where there is no process). */
  stream?: ProgressStream;
  /** The clock, in ms (default Date.now; tests pass their own). */
  now?: () => number;
}

/** Seconds as "12s", "3m04s", "2h05m". */
export function formatDuration(s: number): string {
  if (!Number.isFinite(s) || s < 0) return '?';
  const r = Math.round(s);
  if (r < 60) return `${r}s`;
  if (r < 3600) return `${Math.floor(r / 60)}m${String(r % 60).padStart(2, '0')}s`;
  return `${Math.floor(r / 3600)}h${String(Math.floor((r % 3600) / 60)).padStart(2, '0')}m`;
}

const BAR = 24;
/** Plain (non-TTY) output: a line per this fraction of the total, or per this many ms, whichever first. */
const LINE_FRACTION = 0.1;
const LINE_MS = 5000;
/** TTY redraws at most this often. */
const REDRAW_MS = 100;

function defaultStream(): ProgressStream | undefined {
  const p = (globalThis as { process?: { stderr?: ProgressStream } }).process;
  return p?.stderr;
}

export class Progress {
  private readonly label: string;
  private readonly total: number;
  private readonly stream: ProgressStream | undefined;
  private readonly tty: boolean;
  private readonly now: () => number;
  private readonly t0: number;
  private count = 0;
  private lastDraw = 0;
  private lastLineCount = 0;
  private lastLineAt: number;
  private finished = false;
  private drawnWidth = 0;

  constructor(opts: { label: string; total: number; stream?: { write(s: string): unknown; isTTY?: boolean }; now?: () => number }) {
    this.now = opts.now ?? Date.now;
    this.t0 = this.now();
    this.lastLineAt = this.t0;
    this.label = opts.label;
    this.total = Math.max(0, opts.total);
    this.stream = opts.stream ?? defaultStream();
    this.tty = this.stream?.isTTY === true;
  }

  /** `n` more units done (default 1); `info` is shown after the counts (e.g. the current loss). */
  tick(n = 1, info?: string): void {
    if (this.finished) return;
    this.count = Math.min(this.total, this.count + n);
    const now = this.now();
    if (this.tty) {
      if (now - this.lastDraw >= REDRAW_MS || this.count === this.total) {
        this.lastDraw = now;
        this.draw(this.barLine(now, info));
      }
      return;
    }
    const step = Math.max(1, Math.ceil(this.total * LINE_FRACTION));
    if (this.count - this.lastLineCount >= step || now - this.lastLineAt >= LINE_MS) {
      this.lastLineCount = this.count;
      this.lastLineAt = now;
      this.stream?.write(`${this.plainLine(now, info)}\n`);
    }
  }

  /** Ends the display with a summary line (elapsed time, rate). Later ticks are ignored. */
  done(info?: string): void {
    if (this.finished) return;
    this.finished = true;
    const now = this.now();
    const secs = (now - this.t0) / 1000;
    const line = `${this.label}: ${this.count}/${this.total} in ${formatDuration(secs)}${secs > 0 ? ` (${this.rate(now)}/s)` : ''}${info ? ` ${info}` : ''}`;
    if (this.tty) {
      this.draw(line);
      this.stream?.write('\n');
    } else {
      this.stream?.write(`${line}\n`);
    }
  }

  private rate(now: number): string {
    const r = this.count / Math.max(1e-3, (now - this.t0) / 1000);
    return r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2);
  }

  private eta(now: number): string {
    if (this.count === 0) return '?';
    const per = (now - this.t0) / 1000 / this.count;
    return formatDuration(per * (this.total - this.count));
  }

  private barLine(now: number, info?: string): string {
    const frac = this.total > 0 ? this.count / this.total : 1;
    const full = Math.round(frac * BAR);
    const pct = `${Math.floor(frac * 100)}`.padStart(3);
    return `${this.label} [${'#'.repeat(full)}${'-'.repeat(BAR - full)}] ${pct}% ${this.count}/${this.total} ${this.rate(now)}/s ETA ${this.eta(now)}${info ? ` ${info}` : ''}`;
  }

  private plainLine(now: number, info?: string): string {
    const pct = this.total > 0 ? Math.floor((this.count / this.total) * 100) : 100;
    return `${this.label}: ${this.count}/${this.total} (${pct}%) ${formatDuration((now - this.t0) / 1000)} elapsed, ETA ${this.eta(now)}${info ? ` ${info}` : ''}`;
  }

  private draw(line: string): void {
    const pad = this.drawnWidth > line.length ? ' '.repeat(this.drawnWidth - line.length) : '';
    this.drawnWidth = line.length;
    this.stream?.write(`\r${line}${pad}`);
  }
}
