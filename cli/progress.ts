// Progress on stderr: a redrawn bar on a terminal, a plain line every few seconds elsewhere
// (CI logs, pipes), so long runs show they are alive either way.

export class Progress {
  private doneCount = 0;
  private readonly started = Date.now();
  private lastPlain = 0;
  private readonly tty = process.stderr.isTTY === true;

  constructor(
    private readonly total: number,
    private readonly quiet: boolean,
  ) {}

  private line(): string {
    const secs = (Date.now() - this.started) / 1000;
    const rate = secs > 0 ? this.doneCount / secs : 0;
    const eta = rate > 0 ? Math.ceil((this.total - this.doneCount) / rate) : 0;
    const pct = this.total > 0 ? this.doneCount / this.total : 1;
    const width = 30;
    const bar = "█".repeat(Math.round(pct * width)).padEnd(width, "░");
    return `${bar} ${this.doneCount}/${this.total} ${(pct * 100).toFixed(0)}%  ${rate.toFixed(0)}/s  ETA ${eta}s`;
  }

  tick(n: number): void {
    this.doneCount += n;
    if (this.quiet) return;
    if (this.tty) process.stderr.write(`\r${this.line()}`);
    else if (Date.now() - this.lastPlain >= 2000 || this.doneCount === this.total) {
      this.lastPlain = Date.now();
      process.stderr.write(`${this.line()}\n`);
    }
  }

  note(message: string): void {
    if (this.quiet) return;
    process.stderr.write(this.tty ? `\r\x1b[K${message}\n` : `${message}\n`);
  }

  done(): void {
    if (!this.quiet && this.tty) process.stderr.write(`\r${this.line()}\n`);
  }
}
