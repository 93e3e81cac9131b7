/** A command-line mistake of a test runner (`npm run chaos`, `npm run fuzz`): printed with the usage, exit 2. */
export class UsageError extends Error {}

/** An integer option (`--name N`); `fallback` when absent, else it is required. */
export function integerOption(name: string, text: string | undefined, fallback?: number): number {
  if (text === undefined) {
    if (fallback !== undefined) return fallback;
    throw new UsageError(`--${name} is required`);
  }
  const value = Number(text);
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(value)) throw new UsageError(`--${name} must be an integer, got '${text}'`);
  return value;
}

/**
 * How many items a run makes (`--trials`, `--frames`) and which one alone it replays (`--only I`): with `--only`,
 * the count defaults to I + 1, and I must be below it.
 */
export function countAndOnly(countName: string, count: string | undefined, only: string | undefined, what: string): { count: number; only: number | undefined } {
  const index = only === undefined ? undefined : integerOption('only', only);
  const total = index === undefined ? integerOption(countName, count) : integerOption(countName, count, index + 1);
  if (total < 1) throw new UsageError(`--${countName} must be at least 1`);
  if (index !== undefined && (index < 0 || index >= total)) throw new UsageError(`--only must be a ${what} index below --${countName} (${total})`);
  return { count: total, only: index };
}

/** Runs a runner's `main` and exits with its code; an unexpected error prints its stack and exits 1. */
export function exitWith(main: Promise<number>): void {
  main.then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
