/**
 * A one-line text progress bar for long projection runs. `renderProgress` is pure; `progressReporter` decides
 * when to draw: redrawn in place on a terminal, a plain line every few seconds otherwise (CI logs stay short).
 */

export function renderProgress(done: number, total: number | undefined, width = 30): string {
  if (total === undefined || total <= 0) return `${Math.max(0, done)} positions read`;
  const ratio = Math.min(1, Math.max(0, done / total));
  const filled = Math.round(ratio * width);
  const percent = String(Math.floor(ratio * 100)).padStart(3);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${percent}% ${Math.min(done, total)}/${total}`;
}

export interface ProgressOutput {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

export interface ProgressReporterOptions {
  /** Default 30 characters. */
  readonly width?: number;
  /** Milliseconds between lines when the output is not a terminal. Default 5000. */
  readonly intervalMs?: number;
  /** Milliseconds between redraws on a terminal. Default 100. */
  readonly ttyIntervalMs?: number;
  /** Default `Date.now`. */
  readonly now?: () => number;
}

export interface ProgressReporter {
  /** Pass as `onProgress` to `runProjection`. */
  update(done: number, total?: number): void;
  /** Draws the last state and ends the line. */
  finish(): void;
}

export function progressReporter(output: ProgressOutput, options: ProgressReporterOptions = {}): ProgressReporter {
  const width = options.width ?? 30;
  const tty = output.isTTY === true;
  const interval = tty ? (options.ttyIntervalMs ?? 100) : (options.intervalMs ?? 5000);
  const now = options.now ?? Date.now;
  let lastDrawn: number | undefined;
  let last: { done: number; total: number | undefined } | undefined;
  const draw = (end: boolean): void => {
    if (last === undefined) return;
    const line = renderProgress(last.done, last.total, width);
    output.write(tty ? `\r${line}${end ? '\n' : ''}` : `${line}\n`);
  };
  return {
    update(done, total) {
      last = { done, total };
      const at = now();
      if (lastDrawn !== undefined && at - lastDrawn < interval) return;
      lastDrawn = at;
      draw(false);
    },
    finish() {
      draw(true);
    },
  };
}
