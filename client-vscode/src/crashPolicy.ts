/**
 * When to restart a server that exited on its own.
 *
 * Why a policy object: a server that crashes on every start would otherwise be restarted forever,
 * filling the log and flashing notifications; one that crashes once an hour should always come
 * back. So: restart while fewer than `max` crashes fell within the last `windowMs`. Pure (the
 * clock is passed in), so it is unit-tested without VS Code.
 */
export class CrashPolicy {
  private crashes: number[] = [];

  constructor(
    readonly max = 4,
    readonly windowMs = 3 * 60_000,
  ) {}

  /** Record a crash at `now`; whether to restart, and how many crashes are in the window. */
  crashed(now: number): { restart: boolean; count: number } {
    this.crashes = [...this.crashes.filter((t) => now - t < this.windowMs), now];
    return { restart: this.crashes.length <= this.max, count: this.crashes.length };
  }

  /** Forget past crashes (the user restarted the server by hand). */
  reset(): void {
    this.crashes = [];
  }
}
