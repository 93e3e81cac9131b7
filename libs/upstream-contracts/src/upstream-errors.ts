/** An upstream tool the operator named (`--class`, `--only`, `--tool`) that the upstream does not list. */
export class UnknownUpstreamToolError extends Error {
  readonly code = 'unknown_upstream_tool' as const;

  constructor(
    /** The option that named it, e.g. `--class`. */
    readonly option: string,
    readonly unknown: readonly string[],
    /** The tools the upstream lists. */
    readonly available: readonly string[],
  ) {
    const names = unknown.map((name) => `'${name}'`).join(', ');
    super(`${option} names ${unknown.length === 1 ? 'a tool' : 'tools'} the upstream does not list: ${names} (it lists ${available.length === 0 ? 'none' : available.join(', ')})`);
    this.name = 'UnknownUpstreamToolError';
  }
}

/** A contract file that cannot be written or changed as asked, with the reason of each tool concerned. */
export class UpstreamContractError extends Error {
  readonly code = 'upstream_contract' as const;

  constructor(
    message: string,
    /** Each tool concerned and why. */
    readonly tools: ReadonlyArray<{ readonly upstreamTool: string; readonly reasons: readonly string[] }>,
  ) {
    super(message);
    this.name = 'UpstreamContractError';
  }
}
